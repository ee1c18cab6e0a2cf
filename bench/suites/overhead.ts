import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fmt, type Section } from '../lib/report.ts';
import { percentile } from '../lib/stats.ts';
import { loadTest, DEFAULT_LOAD, type LoadResult } from '../lib/wrk.ts';
import { dataset, startService, workDir } from '../lib/context.ts';
import { freePort, type Running } from '../lib/processes.ts';

const SERVER = 'bench/servers/read-api-observed.ts';
const PATH = '/reviews.json';
const HEADERS = { 'Accept-Encoding': 'gzip' };
const WARMUP_SECONDS = 3;
/**
 * Each variant is measured at the same time as the baseline: both servers on one CPU, each loaded by
 * its own wrk on the other, so the kernel's fair scheduler gives them equal shares of the same
 * seconds and whatever else the shared machine does hits both alike. Measured one after the other,
 * even 2 s apart with the baseline before and after, losses swung by ±8 points between runs of the
 * same code; measured together, two identical servers agree within ~2 % and a variant's loss within
 * a few points from round to round.
 */
const ROUNDS = 5;
const ROUND_SECONDS = Math.min(DEFAULT_LOAD.durationSeconds, 4);
/**
 * Fresh pairs of processes per variant in the saturated pass. Windows of one pair agree with each
 * other better than pairs do: two identical servers, four fresh pairs of four windows, read medians
 * of -3.6 % to +1.3 % (single windows -5.4 % to +6.3 %), so one pair can be a few points off for
 * the life of its processes. The loss is the median over every window of every pair.
 */
const SATURATED_PAIRS = 3;
/** At the fixed rate one pair read metrics alone as anything from -5.7 to +6.3 µs in three runs. */
const FIXED_RATE_PAIRS = 3;
/** Servers under test on one CPU, the two wrk on the other (when taskset is there): no migrations between them. */
const SERVER_CPU = 1;
const WRK_CPU = 0;

const exec = promisify(execFile);

/**
 * The control variant's added cost per request (bench/servers/read-api-observed.ts, BENCH_BUSY_US):
 * about what tracing adds, so the control shows how each method reads a cost of that size.
 */
const CONTROL_BUSY_US = 3;
/**
 * The second pass offers each server the same rate instead of all it can take: every connection
 * waits this long after each response, so 50 connections send ~4,500 req/s whatever the server's
 * speed, as a pod below saturation sees. Both servers see the same arrivals, so a slower one is not
 * also given fewer requests per wake-up. Its control still reads about twice its cost (ADR 0009,
 * sixth-session addendum), and its windows scatter by about ±2 µs.
 */
const FIXED_RATE_DELAY_MS = 10;

/** wrk's per-request delay hook, written next to the bench datasets. */
function fixedRateScript(): string {
  const file = join(workDir, `fixed-rate-${FIXED_RATE_DELAY_MS}ms.lua`);
  writeFileSync(file, `function delay()\n  return ${FIXED_RATE_DELAY_MS}\nend\n`);
  return file;
}

/** Pins every thread of a process to one CPU; false when taskset is missing. */
async function pin(pid: number, cpu: number): Promise<boolean> {
  try {
    await exec('taskset', ['-a', '-p', '-c', String(cpu), String(pid)]);
    return true;
  } catch {
    return false;
  }
}

interface Round extends LoadResult {
  /** Server CPU time (user + system) per request served: steadier than req/s on a busy machine. */
  readonly cpuMicrosPerRequest: number;
}

const median = (values: readonly number[]): number => percentile(values, 50);

/**
 * A process's time on CPU in seconds, all threads, to the nanosecond: the first field of each thread's
 * /proc schedstat. utime + stime from /proc/<pid>/stat count 10 ms ticks, which at the fixed rate
 * (~70 ticks per window) moved a window's figure by ±1.5 % by themselves.
 */
async function cpuSeconds(pid: number): Promise<number> {
  const threads = await readdir(`/proc/${pid}/task`);
  const nanos = await Promise.all(
    threads.map(async (thread) => {
      try {
        return Number((await readFile(`/proc/${pid}/task/${thread}/schedstat`, 'utf8')).split(' ')[0]);
      } catch {
        return 0; // the thread ended between the listing and the read
      }
    }),
  );
  return nanos.reduce((sum, n) => sum + n, 0) / 1e9;
}

/** One window: load two servers at once, each with its own wrk, and read each one's CPU time. */
async function measurePair(servers: readonly [{ url: string; pid: number }, { url: string; pid: number }], cpu: number | undefined, seconds: number, script: string | undefined): Promise<[Round, Round]> {
  const before = await Promise.all(servers.map((s) => cpuSeconds(s.pid)));
  const results = await Promise.all(servers.map((s) => loadTest(s.url, { ...DEFAULT_LOAD, durationSeconds: seconds, headers: HEADERS, ...(cpu === undefined ? {} : { cpu }), ...(script === undefined ? {} : { script }) })));
  const after = await Promise.all(servers.map((s) => cpuSeconds(s.pid)));
  const round = (i: number): Round => ({ ...results[i]!, cpuMicrosPerRequest: ((after[i]! - before[i]!) / (results[i]!.requestsPerSecond * seconds)) * 1e6 });
  return [round(0), round(1)];
}

interface Variant {
  readonly name: string;
  readonly env: Record<string, string>;
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
    { name: 'metrics off, tracing off', env: { BENCH_METRICS: 'off', LOG_LEVEL: 'warn' } },
    { name: 'metrics on, tracing off', env: { LOG_LEVEL: 'warn' } },
    { name: 'metrics on, tracing exporting to nowhere', env: { LOG_LEVEL: 'warn', ...(await exportingToNowhere()) } },
    // The SDK loaded and every request given its unsampled span, none recorded: what tracing costs
    // before any span is recorded or exported (ADR 0009, fifth-session addendum).
    { name: 'metrics on, tracing loaded, always_off sampler', env: { LOG_LEVEL: 'warn', ...(await exportingToNowhere()), OTEL_TRACES_SAMPLER: 'always_off' } },
    {
      name: "metrics on, tracing to nowhere, chart's default sampling (10%)",
      env: { LOG_LEVEL: 'warn', ...(await exportingToNowhere()), OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.1' },
    },
    { name: 'metrics on, tracing to nowhere, info request logs to /dev/null', env: { LOG_LEVEL: 'info', ...(await exportingToNowhere()) } },
    // The control: the baseline plus a cost known in advance, to show how the method reads one.
    { name: `control: everything off, ${CONTROL_BUSY_US} µs of busy CPU added per request`, env: { BENCH_METRICS: 'off', LOG_LEVEL: 'warn', BENCH_BUSY_US: String(CONTROL_BUSY_US) } },
  ];
  // Each variant is measured against a baseline started with it, and both run only while measured,
  // under continuous load like a serving pod, in shared windows (`measurePair`). A baseline kept
  // running across variants made the later ones look cheaper: against a baseline that had served
  // four variants' windows, the 10 % sampling row measured 1-2 % where fresh pairs measured 15-18 %.
  let pinned = true;
  const start = async (variant: Variant): Promise<Running> => {
    // startProcess discards stdout, so info logs cost their formatting and write, like a pod's.
    const service = await startService(SERVER, { DATASET_FILE: file, ...variant.env });
    pinned = (await pin(service.child.pid!, SERVER_CPU)) && pinned;
    return service;
  };
  const server = (service: Running) => ({ url: `http://127.0.0.1:${service.port}${PATH}`, pid: service.child.pid! });
  /** Each variant's windows, pair after pair, and, for each, the baseline's figures in that same window. */
  const measureAll = async (script: string | undefined, pairs: number): Promise<{ rounds: Round[][]; pairedBaseline: Round[][] }> => {
    const rounds: Round[][] = variants.map(() => []);
    const pairedBaseline: Round[][] = variants.map(() => []);
    for (let i = 1; i < variants.length; i++) {
      for (let pair = 0; pair < pairs; pair++) {
        const [baselineService, service] = await Promise.all([start(variants[0]!), start(variants[i]!)]);
        try {
          const wrkCpu = pinned ? WRK_CPU : undefined;
          const servers = [server(baselineService), server(service)] as const;
          // Warm up first (JIT, the exporter's first failed batch): only steady state counts.
          await measurePair(servers, wrkCpu, WARMUP_SECONDS, script);
          for (let round = 0; round < ROUNDS; round++) {
            // Every other window starts the variant's wrk first: with the same server on both sides, the
            // one loaded second served 1-4 % fewer requests per second at the same CPU per request.
            const variantFirst = round % 2 === 1;
            const [first, second] = await measurePair(variantFirst ? [servers[1], servers[0]] : servers, wrkCpu, ROUND_SECONDS, script);
            const [baseline, measured] = variantFirst ? [second, first] : [first, second];
            rounds[i]!.push(measured);
            pairedBaseline[i]!.push(baseline);
          }
        } finally {
          await Promise.all([service.stop(), baselineService.stop()]);
        }
      }
    }
    rounds[0] = pairedBaseline.flat();
    return { rounds, pairedBaseline };
  };
  const { rounds, pairedBaseline } = await measureAll(undefined, SATURATED_PAIRS);
  const fixed = await measureAll(fixedRateScript(), FIXED_RATE_PAIRS);
  const rps = rounds.map((r) => median(r.map((x) => x.requestsPerSecond)));
  const cpu = rounds.map((r) => median(r.map((x) => x.cpuMicrosPerRequest)));
  const p99 = rounds.map((r) => median(r.map((x) => x.p99Ms)));
  const errors = rounds.map((r) => r.reduce((sum, x) => sum + x.non2xx3xx + x.errors, 0));
  // Paired: each window against the baseline in the same window, then the median over rounds. A
  // CPU-bound server's throughput is 1 / CPU per request, so the CPU ratio is the loss a quiet machine would show.
  const pairedLoss = (i: number, lossOf: (variant: Round, baseline: Round) => number) => median(rounds[i]!.map((r, k) => lossOf(r, pairedBaseline[i]![k]!))) * 100;
  const cpuLossOf = (r: Round, base: Round) => 1 - base.cpuMicrosPerRequest / r.cpuMicrosPerRequest;
  const cpuLoss = (i: number) => pairedLoss(i, cpuLossOf);
  /** The median loss from CPU of each pair on its own, in the order measured: how far pairs disagree. */
  const cpuLossByPair = (i: number) =>
    Array.from({ length: SATURATED_PAIRS }, (_, pair) => {
      const windows = Array.from({ length: ROUNDS }, (_, k) => pair * ROUNDS + k);
      return `${(median(windows.map((k) => cpuLossOf(rounds[i]![k]!, pairedBaseline[i]![k]!))) * 100).toFixed(1)}%`;
    }).join(' / ');
  const rpsLoss = (i: number) => pairedLoss(i, (r, base) => 1 - r.requestsPerSecond / base.requestsPerSecond);
  const control = variants.length - 1;
  const fixedCpu = (i: number) => median(fixed.rounds[i]!.map((x) => x.cpuMicrosPerRequest));
  const fixedAdded = (i: number) => median(fixed.rounds[i]!.map((r, k) => r.cpuMicrosPerRequest - fixed.pairedBaseline[i]![k]!.cpuMicrosPerRequest));
  const fixedLoss = (i: number) => median(fixed.rounds[i]!.map((r, k) => 1 - fixed.pairedBaseline[i]![k]!.cpuMicrosPerRequest / r.cpuMicrosPerRequest)) * 100;
  const fixedRows = variants.map((v, i) => [
    v.name,
    fmt(median(fixed.rounds[i]!.map((x) => x.requestsPerSecond))),
    fmt(fixedCpu(i), 1),
    i === 0 ? '—' : fmt(fixedAdded(i), 1),
    i === 0 ? '—' : `${fixedLoss(i).toFixed(1)}%`,
  ]);
  // What the control's loss would read if the method charged it exactly its busy microseconds.
  const controlExpected = median(pairedBaseline[control]!.map((base) => CONTROL_BUSY_US / (base.cpuMicrosPerRequest + CONTROL_BUSY_US))) * 100;
  const rows = variants.map((v, i) => [
    v.name,
    fmt(rps[i]!),
    i === 0 ? '—' : `${rpsLoss(i).toFixed(1)}%`,
    fmt(cpu[i]!, 1),
    i === 0 ? '—' : `${cpuLoss(i).toFixed(1)}%`,
    i === 0 ? '—' : cpuLossByPair(i),
    fmt(p99[i]!, 2),
    errors[i]!,
  ]);
  return {
    id: 'overhead',
    title: 'Observability overhead on the hottest endpoint',
    intro:
      `read-api \`GET ${PATH}\` (gzip, 400-review sample) composed as its main.ts does, with metrics and tracing off and on. Each variant runs beside a baseline (everything off) started with it and is loaded in ${ROUNDS} back-to-back windows of ${ROUND_SECONDS} s (after ${WARMUP_SECONDS} s of warm-up) at the same time as the baseline, in ${SATURATED_PAIRS} fresh pairs of processes one after the other, each server by its own wrk` +
      `${pinned ? ` (both servers pinned to CPU ${SERVER_CPU}, both wrk to CPU ${WRK_CPU})` : ''}, so the two share the same seconds of one core: req/s is each server's half of that core, CPU and p99 are medians over all windows. ` +
      'Loss is given from req/s and from server CPU time per request (the steadier figure on a shared machine; the headline figures use it), each as the median over all windows of the loss against the baseline measured in the same window; the column after it shows the median of each pair alone, since a pair of processes can sit a few points off for its whole life. ' +
      'Every server starts as a pod does (`--import @reviews/runtime/instrumentation`, which also turns V8\'s allocation-site pretenuring off); tracing is a SERVER span per request and the OTLP exporter, exporting to a closed port; ' +
      '"off" is what a pod without `OTEL_*` runs (no SDK loaded). Metrics "off" exists only here (BENCH_METRICS=off); the service always records them. ' +
      `The last row is the control: the baseline plus ${CONTROL_BUSY_US} µs of busy CPU before each request, which charged exactly would read ${controlExpected.toFixed(1)}% (those µs over the baseline's CPU per request) and reads ${cpuLoss(control).toFixed(1)}%. ` +
      `That is ${(cpuLoss(control) / controlExpected).toFixed(1)} times its share: the rows above it, whose added costs are of that size, overstate what they add by a factor of that order (ADR 0009, sixth-session addendum). ` +
      `The second table runs the same pairs at a fixed rate, as a pod below saturation serves (each wrk connection waits ${FIXED_RATE_DELAY_MS} ms after each response, ~4,500 req/s per server, so both servers see the same arrivals): "added CPU" is the median over windows of the variant's CPU per request less the baseline's in the same window. There the control's ${CONTROL_BUSY_US} µs reads ${fixedAdded(control).toFixed(1)} µs, and windows scatter by about ±2 µs. A request costs more CPU at that rate than at saturation (fewer requests per wake-up), so its loss column is a share of a larger figure.`,
    targets: [
      '≤ 10% throughput loss with metrics on and tracing exporting to nowhere, against everything off: every request sampled (third row) and at the Helm chart\'s default sampling of 10% of root traces (fifth row)',
    ],
    commands: [
      'npm run bench -- overhead',
      `taskset -c ${WRK_CPU} wrk -t1 -c${DEFAULT_LOAD.connections} -d${ROUND_SECONDS}s --latency -H 'Accept-Encoding: gzip' http://127.0.0.1:<port>${PATH}   # two at once: the baseline's port and the variant's`,
    ],
    tables: [
      { columns: ['variant', 'req/s (sharing a core with the baseline)', 'throughput loss', 'CPU µs/request', 'loss from CPU', `loss from CPU in each of the ${SATURATED_PAIRS} pairs`, 'p99 ms', 'errors'], rows },
      { columns: [`variant, at a fixed rate (wrk waits ${FIXED_RATE_DELAY_MS} ms per connection between requests)`, 'req/s', 'CPU µs/request', 'added CPU µs/request', 'loss from CPU'], rows: fixedRows },
    ],
    figures: {
      off_rps: Math.round(rps[0]!),
      off_cpu_us: Number(cpu[0]!.toFixed(1)),
      metrics_loss_pct: Number(cpuLoss(1).toFixed(1)),
      metrics_tracing_loss_pct: Number(cpuLoss(2).toFixed(1)),
      tracing_always_off_loss_pct: Number(cpuLoss(3).toFixed(1)),
      metrics_tracing_sampled_10pct_loss_pct: Number(cpuLoss(4).toFixed(1)),
      with_request_logs_loss_pct: Number(cpuLoss(5).toFixed(1)),
      control_busy_loss_pct: Number(cpuLoss(control).toFixed(1)),
      control_busy_expected_pct: Number(controlExpected.toFixed(1)),
      fixed_rate_metrics_tracing_loss_pct: Number(fixedLoss(2).toFixed(1)),
      fixed_rate_metrics_tracing_added_us: Number(fixedAdded(2).toFixed(1)),
      fixed_rate_always_off_loss_pct: Number(fixedLoss(3).toFixed(1)),
      fixed_rate_sampled_10pct_loss_pct: Number(fixedLoss(4).toFixed(1)),
      fixed_rate_control_added_us: Number(fixedAdded(control).toFixed(1)),
    },
  };
}
