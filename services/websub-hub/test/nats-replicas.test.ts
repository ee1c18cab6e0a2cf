import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { spawn } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { buildSnapshotFromInput } from '@reviews/domain';
import { buildDataset } from '../../../libs/domain/test/fixtures.js';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { connectNats, followSnapshots, NatsDatasetSource, NatsDatasetStore, type SnapshotFollower } from '@reviews/dataset-store';
import { createMetrics } from '@reviews/runtime';
import { eventually } from '../../../test/support/eventually.js';
import { startNatsServer, type NatsServerHandle } from '../../../test/support/nats-server.js';
import { BASE_URL, createTestPki, deliveryQueueDrained, publishReviews, silentLogger, startHub, Subscriber, tempDir, TOPIC_URLS, waitFor, type RunningHub, type TestPki } from './support.js';

/** Short enough that a dead replica's jobs move on quickly, longer than one (slow) test delivery. */
const ACK_WAIT_MS = 1_500;
const PUBLISH_CLI = new URL('../../../libs/dataset-store/dist/publish-cli.js', import.meta.url).pathname;

interface Replica {
  readonly hub: RunningHub;
  readonly nc: NatsConnection;
  readonly source: NatsDatasetSource;
  readonly follower: SnapshotFollower;
  /** Graceful stop. */
  stop(): Promise<void>;
  /** Like a crash: the NATS connection drops first, unacknowledged jobs stay with JetStream. */
  kill(): Promise<void>;
}

let nats: NatsServerHandle;
let publisher: NatsConnection;
let datasets: NatsDatasetStore;
let pki: TestPki;
let subscriber: Subscriber;
let dir: { path: string; remove: () => Promise<void> };
const replicas = new Set<Replica>();

async function startReplica(name: string): Promise<Replica> {
  const metrics = createMetrics();
  const source = new NatsDatasetSource({ nats: { servers: nats.url }, replicas: 1, service: name, logger: silentLogger, registry: metrics.registry });
  const follower = await followSnapshots(source, { baseUrl: BASE_URL, logger: silentLogger, metrics, service: name });
  // As a pod connects (nats-pod.ts): reconnecting forever, PINGs that notice a lost reconnect.
  const nc = await connectNats({ servers: nats.url }, { name, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
  const hub = await startHub({ pki, dataDir: dir.path, follower, nats: { nc, ackWaitMs: ACK_WAIT_MS, deliveryConcurrency: 2 } });
  const replica: Replica = {
    hub,
    nc,
    source,
    follower,
    stop: async () => {
      replicas.delete(replica);
      await hub.stop();
      await nc.drain();
      await follower.close();
    },
    kill: async () => {
      replicas.delete(replica);
      await nc.close();
      await hub.stop().catch(() => undefined);
      await follower.close();
    },
  };
  replicas.add(replica);
  return replica;
}

const publish = (seed: number) => publishReviews(datasets, seed);
const queueDrained = () => deliveryQueueDrained(publisher);
const received = (name: string, body: Buffer) => subscriber.countReceived(name, body);

const NAMES = Array.from({ length: 8 }, (_, i) => `replicated-${i}`);

beforeAll(async () => {
  nats = await startNatsServer();
  publisher = await connect({ servers: nats.url, name: 'test-publisher' });
  datasets = await NatsDatasetStore.open(publisher, 1);
  pki = await createTestPki();
  subscriber = await Subscriber.start(pki);
  dir = await tempDir('websub-nats-');
  await publish(1);
});

afterAll(async () => {
  for (const replica of [...replicas]) await replica.stop().catch(() => undefined);
  await subscriber?.close();
  await publisher?.close();
  await nats?.dispose();
  await dir?.remove();
});

describe('two hub replicas on NATS JetStream', () => {
  let a: Replica;
  let b: Replica;

  it('share subscriptions: each change reaches each subscriber exactly once', async () => {
    [a, b] = await Promise.all([startReplica('hub-a'), startReplica('hub-b')]);
    await waitFor(() => a.follower.current() !== null && b.follower.current() !== null, 10_000, 'replicas loaded the dataset');
    for (const [i, name] of NAMES.entries()) {
      const res = await (i % 2 === 0 ? a : b).hub.post({ 'hub.mode': 'subscribe', 'hub.topic': TOPIC_URLS.reviews, 'hub.callback': subscriber.url(name) });
      expect(res.status).toBe(202);
    }
    await waitFor(async () => (await b.hub.store.list()).length === NAMES.length, 10_000, 'all subscriptions verified');

    const body = await publish(2);
    await waitFor(() => NAMES.every((n) => received(n, body) >= 1), 10_000, 'every subscriber notified');
    await waitFor(queueDrained, 10_000, 'delivery queue drained');
    for (const name of NAMES) expect(subscriber.notifications(name)).toHaveLength(1);
  });

  it('a replica killed mid-fan-out: every subscriber still gets the change', async () => {
    for (const name of NAMES) subscriber.behave(name, (req) => (req.method === 'POST' ? { status: 204, delayMs: 400 } : 'echo'));
    const body = await publish(3);
    await waitFor(() => NAMES.some((n) => received(n, body) >= 1), 10_000, 'fan-out under way');
    await a.kill();
    await waitFor(() => NAMES.every((n) => received(n, body) >= 1), 15_000, 'every subscriber notified despite the crash');
    await waitFor(queueDrained, 15_000, 'delivery queue drained');
  });

  it('a change made while every replica was down is delivered when one returns', async () => {
    for (const name of NAMES) subscriber.behave(name, (req) => (req.method === 'POST' ? { status: 204 } : 'echo'));
    await b.stop();
    const body = await publish(4);
    const c = await startReplica('hub-c');
    await waitFor(() => NAMES.every((n) => received(n, body) === 1), 15_000, 'delivered after the restart');
    await waitFor(queueDrained, 10_000, 'delivery queue drained');
    for (const name of NAMES) expect(received(name, body)).toBe(1);
    await c.stop();
  });

  // Announcements were ordered by the pointer's published_at, the publisher's clock: after one publish from a
  // machine an hour ahead, every change published in that hour was silently never announced.
  it('a publisher whose clock runs an hour ahead holds back no later change', async () => {
    const d = await startReplica('hub-d');
    const skew = join(dir.path, 'clock-an-hour-ahead.mjs');
    await writeFile(
      skew,
      'const RealDate = Date; const ahead = 3_600_000;\n' +
        'globalThis.Date = class extends RealDate { constructor(...a) { super(...(a.length ? a : [RealDate.now() + ahead])); } static now() { return RealDate.now() + ahead; } };\n',
    );
    const publishFrom = async (seed: number, preload: string[]) => {
      const input = buildDataset({ reviews: 8, seed });
      const file = join(dir.path, `dataset-${seed}.json`);
      await writeFile(file, JSON.stringify(input));
      const code = await new Promise<number | null>((resolve) => spawn(process.execPath, [...preload, PUBLISH_CLI, file], { env: { PATH: process.env.PATH, NATS_URL: nats.url }, stdio: 'ignore' }).once('exit', resolve));
      expect(code).toBe(0);
      return buildSnapshotFromInput(input, { baseUrl: BASE_URL, publishedAt: new Date() }).topic('reviews').identity.body;
    };
    const ahead = await publishFrom(5, ['--import', skew]);
    await waitFor(() => NAMES.every((n) => received(n, ahead) === 1), 15_000, 'the change published an hour ahead delivered');
    const next = await publishFrom(6, []);
    await waitFor(() => NAMES.every((n) => received(n, next) === 1), 15_000, 'the next change delivered too');
    await d.stop();
  });

  // A 202 promises a verification; with its store out of reach the hub could only drop the request later.
  it('answers 503 with Retry-After while NATS is away, and 202 once it is back', async () => {
    const e = await startReplica('hub-e');
    const subscribe = () => e.hub.post({ 'hub.mode': 'subscribe', 'hub.topic': TOPIC_URLS.reviews, 'hub.callback': subscriber.url('while-nats-away') });
    await nats.stop();
    try {
      await waitFor(async () => (await subscribe()).status === 503, 10_000, 'subscriptions refused while NATS is away');
      const refused = await subscribe();
      expect(refused.headers.get('retry-after')).toBe('5');
      expect(refused.text).toMatch(/^The hub cannot reach its subscription store: NATS disconnected from .*; reconnecting\. Retry later\.\n$/);
      expect(subscriber.verifications('while-nats-away')).toEqual([]);
    } finally {
      await nats.start();
    }
    await waitFor(async () => (await subscribe()).status === 202, 45_000, 'subscriptions accepted again');
    await waitFor(() => subscriber.verifications('while-nats-away').length >= 1, 10_000, 'the accepted request verified');
    await e.stop();
  }, 90_000);

  // NATS reinstalled or its volume lost: the hub's bucket and work queue went with the store. A replica
  // used to fail every subscription and delivery until restarted, while the read side recovered by itself.
  it('NATS back without its store: a running replica takes subscriptions and delivers again, unrestarted', async () => {
    const f = await startReplica('hub-f');
    await nats.stop();
    await rm(nats.storeDir, { recursive: true, force: true });
    await nats.start();
    datasets = await eventually(() => NatsDatasetStore.open(publisher, 1), { timeoutMs: 45_000, intervalMs: 250 });
    const republished = await publish(7);
    await waitFor(() => f.follower.current()?.topic('reviews').identity.body.equals(republished) === true, 45_000, 'the replica follows the new store');

    const subscribe = () => f.hub.post({ 'hub.mode': 'subscribe', 'hub.topic': TOPIC_URLS.reviews, 'hub.callback': subscriber.url('after-store-loss') });
    await waitFor(async () => (await subscribe()).status === 202, 45_000, 'subscriptions accepted again');
    await waitFor(async () => (await f.hub.store.list()).some((s) => s.callback === subscriber.url('after-store-loss')), 10_000, 'the subscription verified and stored');
    const body = await publish(8);
    await waitFor(() => received('after-store-loss', body) === 1, 15_000, 'the change delivered');
    await waitFor(queueDrained, 10_000, 'delivery queue drained');
    await f.stop();
  }, 120_000);
});
