import { fmt, ratio, type Section } from '../lib/report.ts';
import { loadTest, DEFAULT_LOAD, type LoadResult } from '../lib/wrk.ts';
import { dataset, snapshotOf, startBare, startService } from '../lib/context.ts';
import { nginxAvailable, startNginx } from '../lib/nginx.ts';
import { freePort, waitForHttp } from '../lib/processes.ts';

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
    for (const path of ENDPOINTS) {
      const headers = { 'Accept-Encoding': 'gzip' };
      const s = await loadTest(`http://127.0.0.1:${service.port}${path}`, { ...DEFAULT_LOAD, headers });
      const b = await loadTest(`http://127.0.0.1:${bare.port}${path}`, { ...DEFAULT_LOAD, headers });
      const n = nginx ? await loadTest(`http://127.0.0.1:${nginxPort}${path}`, { ...DEFAULT_LOAD, headers }) : null;
      const rep = snapshot.representations[({ '/reviews.json': 'reviews', '/insights.json': 'insights', '/api/feed.json': 'feedJson', '/feed.xml': 'feedAtom', '/.well-known/openapi.json': 'openapi' } as const)[path as '/reviews.json']];
      row(`GET ${path} (gzip)`, s, b, n, (rep.gzip ?? rep.identity).body.length);
    }
    {
      const headers = { 'Accept-Encoding': 'br' };
      const s = await loadTest(`http://127.0.0.1:${service.port}/reviews.json`, { ...DEFAULT_LOAD, headers });
      const b = await loadTest(`http://127.0.0.1:${bare.port}/reviews.json`, { ...DEFAULT_LOAD, headers });
      row('GET /reviews.json (br)', s, b, null, (r.reviews.br ?? r.reviews.identity).body.length);
    }
    {
      const etag = async (port: number) => etagOf(`http://127.0.0.1:${port}/reviews.json`, 'gzip');
      const revalidate = async (port: number) => loadTest(`http://127.0.0.1:${port}/reviews.json`, { ...DEFAULT_LOAD, headers: { 'Accept-Encoding': 'gzip', 'If-None-Match': await etag(port) } });
      const s = await revalidate(service.port);
      const b = await revalidate(bare.port);
      const n = nginx ? await revalidate(nginxPort) : null;
      row('304 revalidation /reviews.json', s, b, n, 0);
    }
  } finally {
    await Promise.all([service.stop(), bare.stop(), nginx?.stop()]);
  }
  return {
    id: 'static',
    title: 'Precomputed representations (fast path)',
    intro:
      'read-api (`services/read-api/dist/main.js`, 400-review sample) against bare `node:http` and nginx `gzip_static`, all serving the identical precomputed bytes. Ratios are service ÷ bare (throughput) and service p99 ÷ bare p99.',
    targets: ['≥ 80% of bare node:http throughput for the same bytes', 'p99 within 2× of bare node:http'],
    commands: [`npm run bench -- static`, `wrk -t1 -c${DEFAULT_LOAD.connections} -d${DEFAULT_LOAD.durationSeconds}s --latency -H 'Accept-Encoding: gzip' http://127.0.0.1:<port>/<path>`],
    tables: [{ columns: ['request', 'body bytes', 'service req/s', 'bare req/s', 'service/bare', 'p99 ms service / bare', 'p99 ratio', 'nginx req/s', 'service/nginx'], rows }],
    figures,
  };
}
