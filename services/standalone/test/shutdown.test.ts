import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { request as httpRequest, type ClientRequest } from 'node:http';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createTestPki, Subscriber } from '../../websub-hub/test/support.js';
import { SAMPLE_DATASET, send } from '../../../test/conformance/harness.js';
import { stopChild } from '../../../test/support/child-process.js';
import { eventually, waitFor } from '../../../test/support/eventually.js';
import { freePort } from '../../../test/support/nats-server.js';

/**
 * Restarts of the REAL standalone entry point (`dist/main.js`, built by `npx tsc -b`) on the same
 * DATA_DIR and DATASET_FILE. Rolling: the old process gets SIGTERM while a fan-out is in flight, a
 * new one starts, and the file changes while the old one is still draining. The old process must
 * finish what it had started and leave the new change to its successor: every subscriber gets
 * each change exactly once. Crash: a process killed while notifications wait for their retry
 * leaves them to the next one.
 */
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const MAIN = join(ROOT, 'services/standalone/dist/main.js');
const NODE = join(ROOT, 'node_modules/.bin/node');
const BASE_URL = 'https://reviews.example.com';
const SUBSCRIBERS = Array.from({ length: 12 }, (_, i) => `rolling-${i}`);
/** Long enough for the SIGTERM to land while every first notification is still unanswered. */
const SLOW_ANSWER_MS = 1_000;

interface Instance {
  readonly url: string;
  readonly metricsUrl: string;
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  output(): string;
}

const children = new Set<ChildProcess>();
let subscriber: Subscriber;
let dir: string;
let env: Record<string, string>;

async function startInstance(overrides: Record<string, string> = {}): Promise<Instance> {
  const [port, metricsPort] = [await freePort(), await freePort()];
  const child = spawn(NODE, [MAIN], { cwd: ROOT, env: { ...env, ...overrides, PORT: String(port), METRICS_PORT: String(metricsPort) }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let log = '';
  child.stdout?.on('data', (chunk: Buffer) => (log += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (log += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = `http://127.0.0.1:${port}`;
  await eventually(
    async () => {
      if (child.exitCode !== null) throw new Error(`standalone exited with ${child.exitCode}:\n${log}`);
      return (await send('GET', `${url}/readyz`)).status === 200;
    },
    { timeoutMs: 20_000, intervalMs: 100 },
  );
  return { url, metricsUrl: `http://127.0.0.1:${metricsPort}`, child, exited, output: () => log };
}

/** Rewrites the dataset file with one author renamed (every topic changes); resolves with the new /reviews.json bytes. */
async function changeDataset(instance: Instance, revision: number): Promise<Buffer> {
  const before = (await send('HEAD', `${instance.url}/reviews.json`)).headers['etag'];
  const dataset = JSON.parse(await readFile(env.DATASET_FILE as string, 'utf8')) as { reviews: Array<{ author: string }> };
  (dataset.reviews[0] as { author: string }).author = `Rolling Restart Reviewer ${revision}`;
  await writeFile(env.DATASET_FILE as string, JSON.stringify(dataset));
  await waitFor(async () => (await send('HEAD', `${instance.url}/reviews.json`)).headers['etag'] !== before, 15_000, `revision ${revision} served`);
  return (await send('GET', `${instance.url}/reviews.json`)).body;
}

/** The subscriptions the hub has stored in `dataDir`, as written to disk. */
async function storedSubscriptions(dataDir = env.DATA_DIR as string): Promise<Array<{ failures: number; lastStatus: number | null }>> {
  const text = await readFile(join(dataDir, 'websub-subscriptions.json'), 'utf8').catch(() => '{}');
  return Object.values((JSON.parse(text) as { subscriptions?: Record<string, { failures: number; lastStatus: number | null }> }).subscriptions ?? {});
}

function subscribe(instance: Instance, name: string): Promise<{ status: number }> {
  const form = new URLSearchParams({ 'hub.mode': 'subscribe', 'hub.topic': `${BASE_URL}/reviews.json`, 'hub.callback': subscriber.url(name) });
  return send('POST', `${instance.url}/api/websub/hub`, { 'Content-Type': 'application/x-www-form-urlencoded' }, form.toString());
}

/**
 * An in-flight request that keeps the old process draining: a hub POST whose body never completes
 * until `release()`. `closedEarly()` tells whether the server dropped it before that.
 */
async function holdRequestOpen(url: string): Promise<{ release(): void; closedEarly(): boolean }> {
  let released = false;
  let closedEarly = false;
  const req: ClientRequest = httpRequest(`${url}/api/websub/hub`, { method: 'POST', agent: false, headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-length': '1000' } });
  req.on('error', () => undefined);
  req.on('close', () => (closedEarly ||= !released));
  await new Promise<void>((resolve) => req.once('socket', (socket) => socket.once('connect', resolve)));
  req.write('hub.mode=subscribe&');
  // A full round trip on another connection: by its answer the server has read the held request too.
  expect((await send('GET', `${url}/healthz`)).status).toBe(200);
  return {
    release() {
      released = true;
      req.destroy();
    },
    closedEarly: () => closedEarly,
  };
}

beforeAll(async () => {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: build first (npx tsc -b)`);
  const pki = await createTestPki();
  subscriber = await Subscriber.start(pki);
  dir = await mkdtemp(join(tmpdir(), 'standalone-shutdown-'));
  await writeFile(join(dir, 'ca.pem'), pki.caPem);
  await copyFile(SAMPLE_DATASET, join(dir, 'dataset.json'));
  env = {
    PATH: process.env.PATH ?? '',
    BASE_URL,
    DATASET_FILE: join(dir, 'dataset.json'),
    DATA_DIR: join(dir, 'data'),
    NODE_EXTRA_CA_CERTS: join(dir, 'ca.pem'),
    WEBSUB_ALLOW_PRIVATE_CALLBACKS: 'true',
    SHUTDOWN_TIMEOUT_MS: '30000',
    // info: the test waits for the old process's "shutting down" line.
    LOG_LEVEL: 'info',
  };
}, 30_000);

afterAll(async () => {
  await Promise.all([...children].map((child) => stopChild(child)));
  await subscriber?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('rolling restart of the standalone service', () => {
  it('a stopping instance finishes the fan-out in flight but leaves a dataset change made after SIGTERM to the next instance', async () => {
    const old = await startInstance();
    for (const name of SUBSCRIBERS) expect((await subscribe(old, name)).status).toBe(202);
    await waitFor(async () => (await storedSubscriptions()).length === SUBSCRIBERS.length, 10_000, 'every subscription verified and stored');
    for (const name of SUBSCRIBERS) subscriber.behave(name, (req) => (req.method === 'POST' ? { status: 204, delayMs: SLOW_ANSWER_MS } : 'echo'));

    const inFlight = await changeDataset(old, 1);
    await waitFor(() => SUBSCRIBERS.some((name) => subscriber.countReceived(name, inFlight) === 1), 10_000, 'fan-out under way');
    const held = await holdRequestOpen(old.url);
    old.child.kill('SIGTERM');
    await waitFor(() => old.output().includes('"msg":"shutting down"'), 10_000, 'the old instance shutting down');
    // The next instance queues again whatever the store does not show as delivered when it starts
    // (the in-process queue forgets). Started before the old one recorded these, it would repeat
    // them (at least once); what this test is about is the change made after SIGTERM.
    await waitFor(async () => (await storedSubscriptions()).every((s) => s.lastStatus === 204), 10_000, 'the fan-out in flight finished and recorded');

    const next = await startInstance();
    const afterSigterm = await changeDataset(next, 2);
    await waitFor(() => SUBSCRIBERS.every((name) => subscriber.countReceived(name, afterSigterm) >= 1), 15_000, 'the next instance notified everyone');
    // Only now may the old process finish: until here it could still have picked the change up.
    expect(held.closedEarly()).toBe(false);
    held.release();
    expect(await old.exited).toBe(0);
    next.child.kill('SIGTERM');
    expect(await next.exited).toBe(0);

    for (const name of SUBSCRIBERS) {
      expect({ name, inFlight: subscriber.countReceived(name, inFlight), afterSigterm: subscriber.countReceived(name, afterSigterm) }).toEqual({ name, inFlight: 1, afterSigterm: 1 });
    }
  }, 90_000);
});

describe('crash of the standalone service', () => {
  it('notifications waiting for their retry when the process is killed are sent by the next instance', async () => {
    // Its own state, and a retry due after the kill: the schedule is in the store, so the next instance keeps it.
    const crashEnv = { DATA_DIR: join(dir, 'crash-data'), WEBSUB_RETRY_DELAYS_MS: '0,3000' };
    const names = ['crash-0', 'crash-1', 'crash-2'];
    const killed = await startInstance(crashEnv);
    for (const name of names) expect((await subscribe(killed, name)).status).toBe(202);
    await waitFor(async () => (await storedSubscriptions(crashEnv.DATA_DIR)).length === names.length, 10_000, 'every subscription verified and stored');
    for (const name of names) {
      let posts = 0;
      subscriber.behave(name, (req) => (req.method === 'POST' ? (++posts === 1 ? { status: 500 } : { status: 204 }) : 'echo'));
    }

    const changed = await changeDataset(killed, 100);
    await waitFor(async () => (await storedSubscriptions(crashEnv.DATA_DIR)).every((s) => s.failures === 1), 10_000, 'every first attempt failed and recorded');
    killed.child.kill('SIGKILL');
    await killed.exited;

    const next = await startInstance(crashEnv);
    await waitFor(async () => (await storedSubscriptions(crashEnv.DATA_DIR)).every((s) => s.failures === 0 && s.lastStatus === 204), 15_000, 'the next instance delivered');
    expect(next.output()).toContain('"resumed":3');
    next.child.kill('SIGTERM');
    expect(await next.exited).toBe(0);
    for (const name of names) expect({ name, received: subscriber.countReceived(name, changed) }).toEqual({ name, received: 2 });
  }, 60_000);
});

// MCP basic/transports (Security Warning): a server running locally SHOULD bind only to localhost.
describe('the address the standalone service listens on', () => {
  /** Another address of this machine than 127.0.0.1: a network interface's, else IPv6 loopback. */
  const elsewhere =
    Object.values(networkInterfaces())
      .flat()
      .find((address) => address !== undefined && !address.internal && address.family === 'IPv4')?.address ?? '[::1]';
  const reachable = async (url: string) => (await send('GET', url).catch(() => null))?.status === 200;
  const at = (url: string, path: string) => `${url.replace('127.0.0.1', elsewhere)}${path}`;

  it('is every interface unless HOST is set; HOST=127.0.0.1 serves loopback only, metrics included', async () => {
    const everywhere = await startInstance();
    expect(await reachable(at(everywhere.url, '/healthz'))).toBe(true);
    expect(await reachable(at(everywhere.metricsUrl, '/metrics'))).toBe(true);
    everywhere.child.kill('SIGTERM');
    await everywhere.exited;

    const local = await startInstance({ HOST: '127.0.0.1' });
    expect(await reachable(`${local.url}/healthz`)).toBe(true);
    expect(await reachable(`${local.metricsUrl}/metrics`)).toBe(true);
    expect(await reachable(at(local.url, '/healthz'))).toBe(false);
    expect(await reachable(at(local.metricsUrl, '/metrics'))).toBe(false);
  });
});
