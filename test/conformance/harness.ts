import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../support/nats-server.js';
import { stopChild } from '../support/child-process.js';
import { eventually } from '../support/eventually.js';

/**
 * The black-box harness: the REAL entry points (`services/<name>/dist/main.js`, as `npm start` and
 * the pods run them) in child processes on free loopback ports, driven only over HTTP. `npm test`
 * builds dist first (typecheck = `tsc -b`); when iterating, run `npx tsc -b` before this suite.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const NODE = join(ROOT, 'node_modules/.bin/node');
export const SAMPLE_DATASET = join(ROOT, 'data/sample-dataset.json');

/** A service entry point (`services/<name>/dist/main.js`), running as its pod or `npm start` would run it. */
export interface RunningService {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** `http://127.0.0.1:<METRICS_PORT>` */
  readonly metricsUrl: string;
  /** Everything the process wrote to stderr and stdout so far (logs). */
  output(): string;
  stop(): Promise<void>;
}

export type ServiceName = 'standalone' | 'read-api' | 'mcp-gateway' | 'websub-hub';

/** Fresh ports to try when one picked was taken before the service bound it. */
const START_ATTEMPTS = 3;

/**
 * Spawns `services/<name>/dist/main.js` on a free loopback port with exactly `env` (plus PATH, ports
 * and LOG_LEVEL=warn) and resolves once `probe` answers 200. A port is picked free and bound by the
 * service a moment later, when another test may have taken it: the start then tries fresh ports.
 */
export async function startService(name: ServiceName, env: Record<string, string>, probe: '/readyz' | '/healthz' = '/readyz'): Promise<RunningService> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnFreePorts(name, env, probe);
    } catch (error) {
      if (attempt >= START_ATTEMPTS || !/EADDRINUSE/.test((error as Error).message)) throw error;
    }
  }
}

/**
 * Waits for services started together: all of them, or none. When one fails to start, the others are
 * stopped before the failure is thrown; a test's afterAll never sees them, and they outlived the run
 * (two read-api pods and a hub, left running after a gateway was not ready in time).
 */
export async function startTogether(starting: readonly Promise<RunningService>[]): Promise<RunningService[]> {
  const outcomes = await Promise.allSettled(starting);
  const failure = outcomes.find((outcome) => outcome.status === 'rejected');
  if (failure === undefined) return outcomes.map((outcome) => (outcome as PromiseFulfilledResult<RunningService>).value);
  await Promise.all(outcomes.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value.stop()] : [])));
  throw failure.reason;
}

async function startOnFreePorts(name: ServiceName, env: Record<string, string>, probe: '/readyz' | '/healthz'): Promise<RunningService> {
  const main = join(ROOT, `services/${name}/dist/main.js`);
  if (!existsSync(main)) throw new Error(`${main} is missing: build first (npx tsc -b)`);
  const [port, metricsPort] = [await freePort(), await freePort()];
  const url = `http://127.0.0.1:${port}`;
  let log = '';
  const child: ChildProcess = spawn(NODE, [main], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', PORT: String(port), METRICS_PORT: String(metricsPort), BASE_URL: url, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (chunk: Buffer) => (log += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (log += chunk.toString()));
  const stop = () => stopChild(child);
  try {
    // An exit ends the wait at once (its output says why), instead of polling a dead port to the deadline.
    const exited = await eventually(
      async () => {
        if (child.exitCode !== null) return true;
        const ready = await send('GET', `${url}${probe}`);
        if (ready.status !== 200) throw new Error(`${name} ${probe} answered ${ready.status}: ${ready.text()}\n${log}`);
        return 'ready';
      },
      { timeoutMs: 20_000, intervalMs: 100 },
    );
    if (exited === true) throw new Error(`${name} exited with ${child.exitCode}:\n${log}`);
  } catch (error) {
    await stop();
    throw error;
  }
  return { url, metricsUrl: `http://127.0.0.1:${metricsPort}`, output: () => log, stop };
}

export interface Standalone {
  /** `http://127.0.0.1:<port>`, also the BASE_URL, so topics and Link headers point here. */
  readonly baseUrl: string;
  /** The dataset file the process watches; rewrite it to publish a change. */
  readonly datasetFile: string;
  /** Everything the process wrote to stderr and stdout so far (logs). */
  output(): string;
  stop(): Promise<void>;
}

/** `withDataset: false` starts it before any dataset exists (DATASET_FILE not yet written), ready only once live. */
export async function startStandalone(env: Record<string, string> = {}, { withDataset = true } = {}): Promise<Standalone> {
  const dir = await mkdtemp(join(tmpdir(), 'conformance-'));
  const datasetFile = join(dir, 'dataset.json');
  if (withDataset) await copyFile(SAMPLE_DATASET, datasetFile);
  try {
    const service = await startService('standalone', { DATASET_FILE: datasetFile, DATA_DIR: join(dir, 'data'), ...env }, withDataset ? '/readyz' : '/healthz');
    return {
      baseUrl: service.url,
      datasetFile,
      output: service.output,
      stop: async () => {
        await service.stop();
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}

/** Runs a service's entry point (standalone unless named) until it exits on its own (start-up failures): exit code and stderr. */
export function runToExit(env: Record<string, string>, name: ServiceName = 'standalone'): Promise<{ code: number | null; stderr: string }> {
  const main = join(ROOT, `services/${name}/dist/main.js`);
  if (!existsSync(main)) throw new Error(`${main} is missing: build first (npx tsc -b)`);
  return new Promise((resolve, reject) => {
    const child = spawn(NODE, [main], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', PORT: '0', METRICS_PORT: '0', LOG_LEVEL: 'silent', ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

export interface RawResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  /** Header names and values exactly as sent, in order. */
  readonly rawHeaders: readonly string[];
  /** Bytes as received: no decompression, so Content-Length and Content-Encoding can be checked. */
  readonly body: Buffer;
  text(): string;
  json(): unknown;
}

/** One HTTP/1.1 exchange with nothing added: no automatic Accept-Encoding, no decoding, no redirects. */
export function send(method: string, url: string, headers: Record<string, string> = {}, body?: string | Buffer): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    // Node sends a DELETE/OPTIONS body without framing unless told its length.
    const framing = body === undefined ? {} : { 'Content-Length': String(Buffer.byteLength(body)) };
    const req = httpRequest(url, { method, headers: { ...framing, ...headers }, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        const bytes = Buffer.concat(chunks);
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          rawHeaders: res.rawHeaders,
          body: bytes,
          text: () => bytes.toString('utf8'),
          json: () => JSON.parse(bytes.toString('utf8')) as unknown,
        });
      });
    });
    req.on('error', reject);
    req.setTimeout(10_000, () => req.destroy(new Error(`${method} ${url}: no answer within 10 s`)));
    req.end(body);
  });
}

/** Every read endpoint of interface spec §4.1–4.5 plus the OpenAPI document, with its exact media type. */
export const READ_ENDPOINTS = [
  { path: '/reviews.json', contentType: 'application/json', topic: true },
  { path: '/insights.json', contentType: 'application/json', topic: false },
  { path: '/api/feed.json', contentType: 'application/json', topic: true },
  { path: '/feed.xml', contentType: 'application/atom+xml', topic: true },
  { path: '/api/reviews/search?rating=5', contentType: 'application/json', topic: false },
  { path: '/api/reviews/since/2026-01-01', contentType: 'application/json', topic: false },
  { path: '/.well-known/openapi.json', contentType: 'application/json', topic: false },
] as const;
