import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRandom } from '@reviews/dataset-generator';
import { buildReviewsDocument, createSearchEngine, deriveInsights, SearchParams, type DatasetInput, type SearchEngine } from '@reviews/domain';
import { fmt, ratio, type Section } from '../lib/report.ts';
import { dataset, startService, workDir } from '../lib/context.ts';
import { datasetInput } from '../lib/datasets.ts';
import { percentile } from '../lib/stats.ts';
import { DEFAULT_LOAD, loadTest, type LoadResult } from '../lib/wrk.ts';

const REVIEWS = 100_000;
const SEED = 7;
const QUERIES_PER_CASE = 2_000;
const WARMUP_QUERIES = 200;
/** More distinct HTTP queries than the read API memoizes per snapshot (1,000), so most miss. */
const DISTINCT_HTTP_QUERIES = 5_000;

type Raw = Record<string, string | number>;

/** Distinct raw parameter sets: filters only, or a substring of a real review text with an optional filter. */
function queries(input: DatasetInput, count: number, withText: boolean, seed: number): Raw[] {
  const random = createRandom(seed);
  const next = () => random.next();
  const pick = <T>(items: readonly T[]): T => random.pick(items);
  const dates = input.reviews.map((r) => r.date).sort();
  const texts = input.reviews.map((r) => r.text).filter((t): t is string => typeof t === 'string' && t.length >= 12);
  const technicians = input.business.technicians.flatMap((t) => [t.name, ...t.aliases]);
  const services = input.business.services.flatMap((s) => [s.id, s.label]);
  const filters: (() => Raw)[] = [
    () => ({ rating: 1 + Math.floor(next() * 5) }),
    () => ({ min_rating: 1 + Math.floor(next() * 5) }),
    () => ({ mentions_technician: pick(technicians) }),
    () => ({ mentions_service: pick(services) }),
    () => {
      const [a, b] = [pick(dates), pick(dates)].sort();
      return { since: a!, until: b! };
    },
    () => ({ since: pick(dates) }),
  ];
  const seen = new Set<string>();
  const out: Raw[] = [];
  while (out.length < count) {
    let raw: Raw = { limit: pick([10, 20, 50, 100]) };
    if (withText) {
      const text = pick(texts);
      const length = 3 + Math.floor(next() * 10);
      const start = Math.floor(next() * (text.length - length));
      raw.query = text.slice(start, start + length);
      if (next() < 0.5) raw = { ...raw, ...pick(filters)() };
    } else {
      const n = 1 + Math.floor(next() * 3);
      for (let i = 0; i < n; i++) raw = { ...raw, ...pick(filters)() };
    }
    const key = JSON.stringify(raw);
    if (seen.has(key) || !SearchParams.safeParse(raw).success) continue;
    seen.add(key);
    out.push(raw);
  }
  return out;
}

function timeSearches(engine: SearchEngine, raws: readonly Raw[]): { p50: number; p99: number; max: number } {
  const params = raws.map((raw) => SearchParams.parse(raw));
  const times = params.map((p) => {
    const start = performance.now();
    engine.search(p);
    return performance.now() - start;
  });
  return { p50: percentile(times, 50), p99: percentile(times, 99), max: Math.max(...times) };
}

/** A wrk script walking through `paths`, one per request. */
function rotatingScript(paths: readonly string[]): string {
  mkdirSync(workDir, { recursive: true });
  const file = join(workDir, 'search-paths.lua');
  const list = paths.map((p) => `  ${JSON.stringify(p)},`).join('\n');
  writeFileSync(file, `local paths = {\n${list}\n}\nlocal i = 0\nrequest = function()\n  i = i % #paths + 1\n  return wrk.format("GET", paths[i])\nend\n`);
  return file;
}

const toPath = (raw: Raw) => `/api/reviews/search?${new URLSearchParams(Object.entries(raw).map(([k, v]): [string, string] => [k, String(v)])).toString()}`;

/** Search at 100,000 reviews: the engine in process over many distinct queries, then over HTTP against the fast path. */
export async function search(): Promise<Section> {
  const input = datasetInput(REVIEWS, SEED);
  const reviewsDocument = buildReviewsDocument(input);
  const engine = createSearchEngine(input, reviewsDocument.reviews, input.business, deriveInsights(input));
  timeSearches(engine, [...queries(input, WARMUP_QUERIES, false, 1), ...queries(input, WARMUP_QUERIES, true, 2)]);
  const filterOnly = timeSearches(engine, queries(input, QUERIES_PER_CASE, false, 3));
  const withQuery = timeSearches(engine, queries(input, QUERIES_PER_CASE, true, 4));

  const service = await startService('services/read-api/dist/main.js', { DATASET_FILE: dataset(REVIEWS, SEED) });
  const url = (path: string) => `http://127.0.0.1:${service.port}${path}`;
  const headers = { 'Accept-Encoding': 'gzip' };
  const repeated = toPath({ query: 'kind', min_rating: 4 });
  const distinct = rotatingScript([...queries(input, DISTINCT_HTTP_QUERIES / 2, false, 5), ...queries(input, DISTINCT_HTTP_QUERIES / 2, true, 6)].map(toPath));
  let fast: LoadResult, memoized: LoadResult, missing: LoadResult;
  try {
    fast = await loadTest(url('/api/feed.json'), { ...DEFAULT_LOAD, headers });
    memoized = await loadTest(url(repeated), { ...DEFAULT_LOAD, headers });
    missing = await loadTest(url('/'), { ...DEFAULT_LOAD, headers, script: distinct });
  } finally {
    await service.stop();
  }
  const ms = (n: number) => fmt(n, 3);
  const row = (name: string, r: LoadResult) => [name, fmt(r.requestsPerSecond), ratio(r.requestsPerSecond, fast.requestsPerSecond), fmt(r.p50Ms, 2), fmt(r.p99Ms, 2), fmt(r.non2xx3xx)];
  return {
    id: 'search',
    title: 'Search at 100,000 reviews',
    intro: `In process: \`SearchEngine.search\` over ${fmt(QUERIES_PER_CASE)} distinct parameter sets per case (seeded; filter-only sets combine 1–3 of rating, min_rating, staff, service and date filters; query sets take a 3–12 character substring of a real review text, half with one filter), after ${fmt(2 * WARMUP_QUERIES)} warm-up searches. Over HTTP: read-api (one process) serving /api/reviews/search, once with one repeated query (memoized per snapshot) and once walking ${fmt(DISTINCT_HTTP_QUERIES)} distinct queries (more than the 1,000 memoized, so mostly misses: search, JSON and the gzip variant the request negotiates), each against the fast path (/api/feed.json) of the same process.`,
    targets: ['in-process p99 ≤ 2 ms filter-only, ≤ 10 ms with `query`', 'HTTP search throughput ≥ 50% of the fast path'],
    commands: ['npm run bench -- search', `wrk -t1 -c${DEFAULT_LOAD.connections} -d${DEFAULT_LOAD.durationSeconds}s --latency -H 'Accept-Encoding: gzip' [-s search-paths.lua] http://127.0.0.1:<port>/api/reviews/search?…`],
    tables: [
      {
        columns: ['in-process search', 'queries', 'p50 ms', 'p99 ms', 'max ms'],
        rows: [
          ['filter-only', fmt(QUERIES_PER_CASE), ms(filterOnly.p50), ms(filterOnly.p99), ms(filterOnly.max)],
          ['with query', fmt(QUERIES_PER_CASE), ms(withQuery.p50), ms(withQuery.p99), ms(withQuery.max)],
        ],
      },
      {
        columns: ['HTTP (gzip)', 'req/s', 'of fast path', 'p50 ms', 'p99 ms', 'non-2xx/3xx'],
        rows: [row('fast path /api/feed.json', fast), row('search, one repeated query', memoized), row(`search, ${fmt(DISTINCT_HTTP_QUERIES)} distinct queries`, missing)],
      },
    ],
    figures: {
      'filter_only.p99_ms': filterOnly.p99,
      'query.p99_ms': withQuery.p99,
      'http.repeated_pct_of_fast_path': Math.round((memoized.requestsPerSecond / fast.requestsPerSecond) * 100),
      'http.distinct_pct_of_fast_path': Math.round((missing.requestsPerSecond / fast.requestsPerSecond) * 100),
    },
  };
}
