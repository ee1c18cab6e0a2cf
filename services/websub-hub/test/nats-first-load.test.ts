import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connectNats, NatsDatasetStore, POINTER_BUCKET, POINTER_KEY } from '@reviews/dataset-store';
import type { NatsConnection } from '@nats-io/transport-node';
import { startNatsServer, type NatsServerHandle } from '../../../test/support/nats-server.js';
import { createNatsJobQueue } from '../src/queue/nats-queue.js';
import { createTestPki, publishReviews, deliveryConsumerState, silentLogger, snapshotFor, startHub, Subscriber, tempDir, TestFollower, TOPIC_URLS, waitFor, type RunningHub, type TestPki } from './support.js';

/**
 * A hub pod listens, and takes delivery jobs, while it loads its first dataset. A job it takes then
 * cannot be sent from there; it must not be given up either, however old it is (a notification's
 * third attempt comes about six minutes after its change was announced).
 */
let nats: NatsServerHandle;
let nc: NatsConnection;
let pki: TestPki;
let subscriber: Subscriber;
let dir: { path: string; remove: () => Promise<void> };
const hubs: RunningHub[] = [];

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connectNats({ servers: nats.url }, { name: 'first-load-test', maxReconnectAttempts: -1, reconnectTimeWait: 250 });
  pki = await createTestPki();
  subscriber = await Subscriber.start(pki);
  dir = await tempDir('hub-first-load-');
});

afterAll(async () => {
  for (const hub of hubs) await hub.stop();
  await nc?.drain();
  await subscriber?.close();
  await nats?.dispose();
  await dir?.remove();
});

describe('a hub replica loading its first dataset', () => {
  it('leaves an old delivery job to be sent once the dataset is loaded, instead of dropping it', async () => {
    // Published over NATS too: a hub announces only the version the dataset pointer designates.
    await publishReviews(await NatsDatasetStore.open(nc, 1), 71);
    const snapshot = snapshotFor(71);
    const loaded = new TestFollower();
    loaded.publish(snapshot);
    const first = await startHub({ pki, dataDir: dir.path, follower: loaded, nats: { nc, ackWaitMs: 5_000, deliveryConcurrency: 2 } });
    hubs.push(first);
    expect((await first.post({ 'hub.mode': 'subscribe', 'hub.topic': TOPIC_URLS.reviews, 'hub.callback': subscriber.url('old-job') })).status).toBe(202);
    await waitFor(async () => (await first.store.list()).length === 1, 10_000, 'the subscription verified');
    const [subscription] = await first.store.list();
    const state = await first.store.topicState('reviews');
    // A subscriber that still has an older content: the job below owes it this one.
    await first.store.update(subscription!.key, (cur) => cur && { ...cur, deliveredEtag: '"older"' });
    await first.stop();
    hubs.splice(0);

    // The job of a change announced six minutes ago, on its way to its third attempt.
    const queue = await createNatsJobQueue({ js: jetstream(nc), jsm: await jetstreamManager(nc), concurrency: 1, ackWaitMs: 5_000, replicas: 1, logger: silentLogger });
    await queue.enqueue([{ subscriptionKey: subscription!.key, topic: 'reviews', seq: state!.seq, etag: state!.etag, enqueuedAt: Date.now() - 6 * 60_000 }]);
    await queue.close();
    const handedOutBefore = (await deliveryConsumerState(nc)).handedOut;

    const loading = new TestFollower();
    const starting = await startHub({ pki, dataDir: dir.path, follower: loading, nats: { nc, ackWaitMs: 5_000, deliveryConcurrency: 2 } });
    hubs.push(starting);
    await waitFor(async () => (await deliveryConsumerState(nc)).handedOut > handedOutBefore, 10_000, 'the loading replica took the job');
    expect(subscriber.notifications('old-job')).toHaveLength(0);

    loading.publish(snapshot);
    await waitFor(() => subscriber.notifications('old-job').length === 1, 10_000, 'the notification sent once the dataset is loaded');
    expect(subscriber.countReceived('old-job', snapshot.topic('reviews').identity.body)).toBe(1);
  }, 60_000);

  // A replica that starts while the pointer is refused serves an earlier version: announcing it would send subscribers back in time.
  it('announces nothing while the dataset pointer cannot be read', async () => {
    const announced = snapshotFor(71).topic('reviews').identity.etag;
    await (await new Kvm(jetstream(nc)).open(POINTER_BUCKET)).put(POINTER_KEY, 'not a pointer');
    const earlier = new TestFollower();
    earlier.publish(snapshotFor(73));
    // start() returns once its first announcement is decided.
    const hub = await startHub({ pki, dataDir: dir.path, follower: earlier, nats: { nc, ackWaitMs: 5_000, deliveryConcurrency: 2 } });
    hubs.push(hub);
    expect((await hub.store.topicState('reviews'))?.etag).toBe(announced);
  }, 60_000);
});
