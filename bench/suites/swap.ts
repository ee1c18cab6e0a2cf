import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import type { Agent } from 'node:http';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { buildSnapshot } from '@reviews/domain';
import { FileDatasetSource, followSnapshots } from '@reviews/dataset-store';
import { createLogger, createMetrics } from '@reviews/runtime';
import { pollAgent, servedEtag } from '../lib/etag-poll.ts';
import { fmt, type Section } from '../lib/report.ts';
import { BASE_URL, dataset, startService, workDir } from '../lib/context.ts';
import { datasetInput, editedVersions } from '../lib/datasets.ts';
import { rssBytes } from '../lib/processes.ts';
import { percentile } from '../lib/stats.ts';
import { DEFAULT_LOAD, loadTest } from '../lib/wrk.ts';

const REVIEWS = 10_000;
const LARGE_REVIEWS = 100_000;
const SEED = 7;
const SWAPS = 3;
/** Load window around one swap: long enough to cover it, short enough that the swap shows in p99. */
const WARMUP_SECONDS = 2;
const WINDOW_SECONDS = Math.min(DEFAULT_LOAD.durationSeconds, 4);
const WRITE_AFTER_MS = 500;
const SWAP_TIMEOUT_MS = 30_000;

/** Replace the file as a publisher would (write aside, rename over), so the watcher never reads half a file. */
function publish(file: string, bytes: string): void {
  writeFileSync(`${file}.next`, bytes);
  renameSync(`${file}.next`, file);
}

/** Milliseconds from `start` until /reviews.json answers with an ETag other than `old`. */
async function swappedAfter(agent: Agent, port: number, old: string, start: number): Promise<number> {
  while (performance.now() - start < SWAP_TIMEOUT_MS) {
    if ((await servedEtag(agent, port).catch(() => old)) !== old) return performance.now() - start;
    await delay(10);
  }
  throw new Error(`no new ETag within ${SWAP_TIMEOUT_MS} ms`);
}

/** Largest event-loop delay while a follower in this process swaps `next` in (the build runs on its worker). */
async function workerStallMs(base: string, next: string): Promise<{ stallMs: number; swapMs: number }> {
  const dir = join(workDir, 'swap-inprocess');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'dataset.json');
  writeFileSync(file, base);
  const logger = createLogger('bench', 'silent');
  const follower = await followSnapshots(new FileDatasetSource(file, { logger, debounceMs: 20 }), { baseUrl: BASE_URL, logger, metrics: createMetrics(), service: 'bench' });
  try {
    const before = follower.current()?.version;
    const loop = monitorEventLoopDelay({ resolution: 1 });
    loop.enable();
    const start = performance.now();
    publish(file, next);
    while (follower.current()?.version === before) await delay(5);
    const swapMs = performance.now() - start;
    loop.disable();
    return { stallMs: loop.max / 1e6, swapMs };
  } finally {
    await follower.close();
  }
}

/** Peak and current resident set of a process, from /proc. */
function peakRssBytes(pid: number): number {
  const kb = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return kb ? Number(kb) * 1024 : 0;
}

/** A 10,000-review dataset swapped in under load (file source), the event-loop stall of a build, and RSS at 100,000 reviews. */
export async function swap(): Promise<Section> {
  const base = readFileSync(dataset(REVIEWS, SEED), 'utf8');
  const [edited] = editedVersions(datasetInput(REVIEWS, SEED), 1);
  const next = JSON.stringify(edited);

  // The previous design built on the serving thread: the stall was the whole build.
  const syncStart = performance.now();
  buildSnapshot(JSON.parse(base), { baseUrl: BASE_URL, publishedAt: new Date() });
  const inThreadMs = performance.now() - syncStart;
  const offThread = await workerStallMs(base, next);

  const dir = join(workDir, 'swap');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'dataset.json');
  writeFileSync(file, base);
  const service = await startService('services/read-api/dist/main.js', { DATASET_FILE: file });
  const agent = pollAgent();
  const load = { ...DEFAULT_LOAD, durationSeconds: WINDOW_SECONDS, headers: { 'Accept-Encoding': 'gzip' } };
  const url = `http://127.0.0.1:${service.port}/api/feed.json`;
  const rows: (string | number)[][] = [];
  const swapTimes: number[] = [];
  const ratios: number[] = [];
  let rss10k = 0;
  try {
    // A cold server's first seconds (JIT, first responses) are not a steady state to compare with.
    await loadTest(url, { ...load, durationSeconds: WARMUP_SECONDS });
    for (let i = 0; i < SWAPS; i++) {
      const steady = await loadTest(url, load);
      const old = await servedEtag(agent, service.port);
      const during = loadTest(url, load);
      await delay(WRITE_AFTER_MS);
      const start = performance.now();
      publish(file, i % 2 === 0 ? next : base);
      const swapMs = await swappedAfter(agent, service.port, old, start);
      const loaded = await during;
      swapTimes.push(swapMs);
      ratios.push(loaded.p99Ms / steady.p99Ms);
      rows.push([`swap ${i + 1}`, fmt(swapMs), fmt(steady.requestsPerSecond), fmt(loaded.requestsPerSecond), fmt(steady.p99Ms, 2), fmt(loaded.p99Ms, 2), `${(loaded.p99Ms / steady.p99Ms).toFixed(2)}×`]);
    }
    rss10k = await rssBytes(service.child.pid!);
  } finally {
    agent.destroy();
    await service.stop();
  }

  const large = await startService('services/read-api/dist/main.js', { DATASET_FILE: dataset(LARGE_REVIEWS, SEED) });
  let rss100k = 0;
  let peak100k = 0;
  try {
    rss100k = await rssBytes(large.child.pid!);
    peak100k = peakRssBytes(large.child.pid!);
  } finally {
    await large.stop();
  }
  const mib = (bytes: number) => fmt(bytes / 2 ** 20);
  return {
    id: 'swap',
    title: 'Dataset swap and memory',
    intro: `read-api (one process, file source) serving a ${fmt(REVIEWS)}-review dataset while the file is replaced by an edited version (one owner reply changed; written aside and renamed over). Swap time runs from the rename to /reviews.json answering with a new ETag (polled every 10 ms over a kept-alive connection); p99 is /api/feed.json under wrk during a ${WINDOW_SECONDS} s window containing the swap, against the ${WINDOW_SECONDS} s window just before it. The stall rows compare the largest event-loop delay of a swap in process: the previous design built on the serving thread (stall = the whole build), the build worker leaves only receiving the content and assembling the search engine.`,
    targets: ['swap ≤ 2 s from the change event at 10,000 reviews', 'request p99 during a swap ≤ 2× steady state', 'RSS with 100,000 reviews < 1 GiB'],
    commands: ['npm run bench -- swap', `wrk -t1 -c${DEFAULT_LOAD.connections} -d${WINDOW_SECONDS}s --latency -H 'Accept-Encoding: gzip' http://127.0.0.1:<port>/api/feed.json`],
    tables: [
      { columns: ['run', 'swap ms', 'steady req/s', 'during req/s', 'steady p99 ms', 'during p99 ms', 'p99 ratio'], rows },
      {
        columns: [`event-loop stall of one ${fmt(REVIEWS)}-review build`, 'ms'],
        rows: [
          ['build on the serving thread (before)', fmt(inThreadMs)],
          ['build worker: largest event-loop delay (after)', fmt(offThread.stallMs)],
          ['build worker: change to swap, in process', fmt(offThread.swapMs)],
        ],
      },
      {
        columns: ['memory', 'MiB'],
        rows: [
          [`RSS after ${SWAPS} swaps, ${fmt(REVIEWS)} reviews`, mib(rss10k)],
          [`RSS serving ${fmt(LARGE_REVIEWS)} reviews`, mib(rss100k)],
          [`peak RSS while loading ${fmt(LARGE_REVIEWS)} reviews`, mib(peak100k)],
        ],
      },
    ],
    figures: {
      'swap.median_ms': Math.round(percentile(swapTimes, 50)),
      'swap.max_p99_ratio': Number(Math.max(...ratios).toFixed(2)),
      'stall.worker_ms': Math.round(offThread.stallMs),
      'rss_100k_mib': Math.round(rss100k / 2 ** 20),
    },
  };
}
