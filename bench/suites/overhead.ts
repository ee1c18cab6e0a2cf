import { fmt, type Section } from '../lib/report.ts';
import { loadTest, DEFAULT_LOAD, type LoadResult } from '../lib/wrk.ts';
import { dataset, startService } from '../lib/context.ts';
import { freePort, type Running } from '../lib/processes.ts';

const SERVER = 'bench/servers/read-api-observed.ts';
const PATH = '/reviews.json';
const HEADERS = { 'Accept-Encoding': 'gzip' };
const WARMUP_SECONDS = 2;
const ROUNDS = 3;

function medianRound(results: LoadResult[]): LoadResult {
  return [...results].sort((a, b) => a.requestsPerSecond - b.requestsPerSecond)[Math.floor(results.length / 2)]!;
}

interface Variant {
  readonly name: string;
  readonly env: Record<string, string>;
  readonly preload: boolean;
}

/**
 * Tracing "exporting to nowhere": the OTLP exporter a pod would use, pointed at a closed loopback
 * port, so every request pays for its spans and the batch processor's failed exports, never for a
 * collector's speed. Only traces: the SDK's metrics and logs exporters stay off, as in the chart.
 */
async function exportingToNowhere(): Promise<Record<string, string>> {
  return {
    OTEL_TRACES_EXPORTER: 'otlp',
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${await freePort()}`,
    OTEL_METRICS_EXPORTER: 'none',
    OTEL_LOGS_EXPORTER: 'none',
    OTEL_SERVICE_NAME: 'read-api-bench',
  };
}

/** read-api's hottest endpoint with metrics and tracing off, then on, in one run: their cost on the fast path. */
export async function overhead(): Promise<Section> {
  const file = dataset(400, 42);
  const variants: Variant[] = [
    { name: 'metrics off, tracing off', env: { BENCH_METRICS: 'off', LOG_LEVEL: 'warn' }, preload: false },
    { name: 'metrics on, tracing off', env: { LOG_LEVEL: 'warn' }, preload: false },
    { name: 'metrics on, tracing exporting to nowhere', env: { LOG_LEVEL: 'warn', ...(await exportingToNowhere()) }, preload: true },
    { name: 'metrics on, tracing to nowhere, info request logs to /dev/null', env: { LOG_LEVEL: 'info', ...(await exportingToNowhere()) }, preload: true },
  ];
  // All variants run side by side (idle ones cost nothing) and are measured in alternating rounds,
  // so a load spike on the machine hits every variant alike; each figure is the median round.
  const services: Running[] = [];
  const rounds: LoadResult[][] = variants.map(() => []);
  try {
    for (const variant of variants) {
      const extraArgs = variant.preload ? ['--import', '@reviews/runtime/instrumentation'] : [];
      // startProcess discards stdout, so info logs cost their formatting and write, like a pod's.
      services.push(await startService(SERVER, { DATASET_FILE: file, ...variant.env }, extraArgs));
    }
    const url = (i: number) => `http://127.0.0.1:${services[i]!.port}${PATH}`;
    // Warm up first (JIT, the exporter's first failed batch): only steady state counts.
    for (const [i] of variants.entries()) await loadTest(url(i), { ...DEFAULT_LOAD, durationSeconds: WARMUP_SECONDS, headers: HEADERS });
    for (let round = 0; round < ROUNDS; round++) {
      for (const [i] of variants.entries()) rounds[i]!.push(await loadTest(url(i), { ...DEFAULT_LOAD, headers: HEADERS }));
    }
  } finally {
    await Promise.all(services.map((s) => s.stop()));
  }
  const results = rounds.map(medianRound);
  const baseline = results[0]!;
  const loss = (r: LoadResult) => (1 - r.requestsPerSecond / baseline.requestsPerSecond) * 100;
  const rows = variants.map((v, i) => {
    const r = results[i]!;
    return [v.name, fmt(r.requestsPerSecond), i === 0 ? '—' : `${loss(r).toFixed(1)}%`, fmt(r.p50Ms, 2), fmt(r.p99Ms, 2), r.non2xx3xx + r.errors];
  });
  return {
    id: 'overhead',
    title: 'Observability overhead on the hottest endpoint',
    intro:
      `read-api \`GET ${PATH}\` (gzip, 400-review sample) composed as its main.ts does, with metrics and tracing off and on, all running side by side and measured in ${ROUNDS} alternating rounds (median round shown). ` +
      'Tracing uses the pod setup (`--import @reviews/runtime/instrumentation`, HTTP instrumentation, OTLP exporter) exporting to a closed port; ' +
      '"off" is what a pod without `OTEL_*` runs (no SDK loaded). Metrics "off" exists only here (BENCH_METRICS=off); the service always records them.',
    targets: ['≤ 10% throughput loss with metrics on and tracing exporting to nowhere (third row) against everything off'],
    commands: [
      'npm run bench -- overhead',
      `wrk -t1 -c${DEFAULT_LOAD.connections} -d${DEFAULT_LOAD.durationSeconds}s --latency -H 'Accept-Encoding: gzip' http://127.0.0.1:<port>${PATH}`,
    ],
    tables: [{ columns: ['variant', 'req/s', 'throughput loss', 'p50 ms', 'p99 ms', 'errors'], rows }],
    figures: {
      off_rps: Math.round(baseline.requestsPerSecond),
      metrics_loss_pct: Number(loss(results[1]!).toFixed(1)),
      metrics_tracing_loss_pct: Number(loss(results[2]!).toFixed(1)),
      with_request_logs_loss_pct: Number(loss(results[3]!).toFixed(1)),
    },
  };
}
