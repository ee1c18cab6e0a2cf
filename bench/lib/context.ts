import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildSnapshot, type Snapshot } from '@reviews/domain';
import { freePort, nodeBinary, repoRoot, startProcess, waitForHttp, type Running } from './processes.ts';

export const BASE_URL = 'http://localhost:8080';
export const workDir = join(repoRoot, 'tmp', 'bench');

/** A generated dataset of `reviews` reviews, cached under tmp/bench (never committed). */
export function dataset(reviews: number, seed = 7): string {
  mkdirSync(workDir, { recursive: true });
  const file = join(workDir, `dataset-${reviews}-${seed}.json`);
  if (!existsSync(file)) {
    execFileSync(nodeBinary, [join(repoRoot, 'libs/dataset-generator/dist/cli.js'), '--reviews', String(reviews), '--seed', String(seed), '--out', file], { stdio: 'inherit' });
  }
  return file;
}

export function snapshotOf(file: string): Snapshot {
  const built = buildSnapshot(JSON.parse(readFileSync(file, 'utf8')), { baseUrl: BASE_URL, publishedAt: new Date(0) });
  if (!built.ok) throw new Error(`invalid dataset ${file}: ${JSON.stringify(built.issues.slice(0, 3))}`);
  return built.snapshot;
}

/** A service main as a pod runs it: the runtime's preload first, configuration from the environment only. */
export async function startService(main: string, env: Record<string, string>): Promise<Running> {
  const port = await freePort();
  const running = startProcess(['--import', '@reviews/runtime/instrumentation', join(repoRoot, main)], { PORT: String(port), METRICS_PORT: '0', BASE_URL, ...env }, port);
  await waitForHttp(`http://127.0.0.1:${port}/readyz`, 120_000);
  return running;
}

export async function startBare(datasetFile: string): Promise<Running> {
  const port = await freePort();
  const running = startProcess([join(repoRoot, 'bench/servers/bare.ts')], { PORT: String(port), DATASET_FILE: datasetFile, BASE_URL }, port);
  await waitForHttp(`http://127.0.0.1:${port}/reviews.json`, 120_000);
  return running;
}
