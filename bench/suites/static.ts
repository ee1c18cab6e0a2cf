import { fmt, ratio, type Section } from '../lib/report.ts';
import { loadTest, DEFAULT_LOAD, type LoadResult } from '../lib/wrk.ts';
import { dataset, snapshotOf, startBare, startService } from '../lib/context.ts';
import { nginxAvailable, startNginx } from '../lib/nginx.ts';
import { freePort, waitForHttp } from '../lib/processes.ts';

/** Each row alternates service, bare and nginx this many times and reports the medians: single runs swing ±20% here. */
const ROUNDS = 3;
const ROUND_LOAD = { ...DEFAULT_LOAD, durationSeconds: Math.max(2, Math.round(DEFAULT_LOAD.durationSeconds / 2)) };

function medianBy(results: LoadResult[], key: keyof LoadResult): number {
  return [...results].map((r) => r[key]).sort((a, b) => a - b)[Math.floor(results.length / 2)]!;
}

/** Run every target once per round, in turn, so a slow spell on the machine hits all of them alike. */
async function alternate(targets: (() => Promise<LoadResult>)[]): Promise<LoadResult[]> {
  const runs: LoadResult[][] = targets.map(() => []);
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, target] of targets.entries()) runs[i]!.push(await target());
  }
  return runs.map((r) => ({
    requestsPerSecond: medianBy(r, 'requestsPerSecond'),
    p50Ms: medianBy(r, 'p50Ms'),
    p99Ms: medianBy(r, 'p99Ms'),
    non2xx3xx: r.reduce((sum, x) => sum + x.non2xx3xx, 0),
    errors: r.reduce((sum, x) => sum + x.errors, 0),
  }));
}

const ENDPOINTS = ['/reviews.json', '/insights.json', '/api/feed.json', '/feed.xml', '/.well-known/openapi.json'];

async function etagOf(url: string, encoding: string): Promise<string> {
  const res = await fetch(url, { headers: { 'accept-encoding': encoding } });
  await res.arrayBuffer();
  return res.headers.get('etag') ?? '';
}

/** Precomputed representations: the read-api fast path against bare node:http and nginx, same bytes. */
export async function staticRepresentations(): Promise<Section> {
  const file = dataset(400, 42);
  const snapshot = snapshotOf(file);
  const service = await startService('services/read-api/dist/main.js', { DATASET_FILE: file });
  const bare = await startBare(file);
  const nginxPort = nginxAvailable() ? await freePort() : 0;
  const r = snapshot.representations;
  const nginx = nginxAvailable() ? startNginx(nginxPort, { 'reviews.json': r.reviews, 'insights.json': r.insights, 'api/feed.json': r.feedJson, 'feed.xml': r.feedAtom, '.well-known/openapi.json': r.openapi }) : null;
  if (nginx) await waitForHttp(`http://127.0.0.1:${nginxPort}/reviews.json`);
  const rows: (string | number)[][] = [];
  const figures: Record<string, number> = {};
  const row = (name: string, s: LoadResult, b: LoadResult, n: LoadResult | null, bytes: number) => {
    rows.push([
      name,
      fmt(bytes),
      fmt(s.requestsPerSecond),
      fmt(b.requestsPerSecond),
      ratio(s.requestsPerSecond, b.requestsPerSecond),
      `${fmt(s.p99Ms, 2)} / ${fmt(b.p99Ms, 2)}`,
      b.p99Ms > 0 ? `${(s.p99Ms / b.p99Ms).toFixed(2)}×` : '—',
      n ? fmt(n.requestsPerSecond) : 'n/a',
      n ? ratio(s.requestsPerSecond, n.requestsPerSecond) : 'n/a',
    ]);
    figures[`${name}.rps`] = Math.round(s.requestsPerSecond);
    figures[`${name}.vs_bare_pct`] = Math.round((s.requestsPerSecond / b.requestsPerSecond) * 100);
  };
  try {
    // Warm the JIT of both Node servers so the first measured row is not a cold start.
    for (const port of [service.port, bare.port]) {
      for (const path of ENDPOINTS) await loadTest(`http://127.0.0.1:${port}${path}`, { connections: DEFAULT_LOAD.connections, durationSeconds: 1, headers: { 'Accept-Encoding': 'gzip' } });
    }
    const load = (port: number, path: string, headers: Record<string, string>) => () => loadTest(`http://127.0.0.1:${port}${path}`, { ...ROUND_LOAD, headers });
    for (const path of ENDPOINTS) {
      const headers = { 'Accept-Encoding': 'gzip' };
      const [s, b, n] = await alternate([load(service.port, path, headers), load(bare.port, path, headers), ...(nginx ? [load(nginxPort, path, headers)] : [])]);
      const rep = snapshot.representations[({ '/reviews.json': 'reviews', '/insights.json': 'insights', '/api/feed.json': 'feedJson', '/feed.xml': 'feedAtom', '/.well-known/openapi.json': 'openapi' } as const)[path as '/reviews.json']];
      row(`GET ${path} (gzip)`, s!, b!, n ?? null, (rep.gzip ?? rep.identity).body.length);
    }
    {
      const headers = { 'Accept-Encoding': 'br' };
      const [s, b] = await alternate([load(service.port, '/reviews.json', headers), load(bare.port, '/reviews.json', headers)]);
      row('GET /reviews.json (br)', s!, b!, null, (r.reviews.br ?? r.reviews.identity).body.length);
    }
    {
      const revalidate = async (port: number) => load(port, '/reviews.json', { 'Accept-Encoding': 'gzip', 'If-None-Match': await etagOf(`http://127.0.0.1:${port}/reviews.json`, 'gzip') });
      const [s, b, n] = await alternate([await revalidate(service.port), await revalidate(bare.port), ...(nginx ? [await revalidate(nginxPort)] : [])]);
      row('304 revalidation /reviews.json', s!, b!, n ?? null, 0);
    }
  } finally {
    await Promise.all([service.stop(), bare.stop(), nginx?.stop()]);
  }
  return {
    id: 'static',
    title: 'Precomputed representations (fast path)',
    intro:
      'read-api (`services/read-api/dist/main.js`, 400-review sample) against bare `node:http` and nginx `gzip_static`, all serving the identical precomputed bytes, measured in ' + ROUNDS + ' alternating rounds per row (medians), so a slow spell of the machine hits all servers alike. Ratios are service ÷ bare (throughput) and service p99 ÷ bare p99.',
    targets: ['≥ 80% of bare node:http throughput for the same bytes', 'p99 within 2× of bare node:http'],
    commands: [`npm run bench -- static`, `wrk -t1 -c${ROUND_LOAD.connections} -d${ROUND_LOAD.durationSeconds}s --latency -H 'Accept-Encoding: gzip' http://127.0.0.1:<port>/<path>   # ${ROUNDS} alternating rounds per server, medians`],
    tables: [{ columns: ['request', 'body bytes', 'service req/s', 'bare req/s', 'service/bare', 'p99 ms service / bare', 'p99 ratio', 'nginx req/s', 'service/nginx'], rows }],
    figures,
  };
}
