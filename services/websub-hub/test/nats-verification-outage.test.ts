import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { NatsConnection } from '@nats-io/transport-node';
import { connectNats, NatsDatasetStore } from '@reviews/dataset-store';
import { startNatsServer, type NatsServerHandle } from '../../../test/support/nats-server.js';
import { capturingLogger, createTestPki, publishReviews, snapshotFor, startHub, Subscriber, tempDir, TestFollower, TOPIC_URLS, waitFor, type RunningHub } from './support.js';

/**
 * A subscriber that answered the challenge has been told its request works. A NATS restart between
 * its answer and the hub's write of the subscription must not lose the request: the hub records it
 * once NATS is back, within the request's deadline. Nor may a request the hub answered 202 while NATS
 * hung (it reads as connected until its PINGs go unanswered) be dropped before its verification.
 */
let nats: NatsServerHandle;
let nc: NatsConnection;
let subscriber: Subscriber;
let hub: RunningHub | undefined;
let dir: { path: string; remove: () => Promise<void> };
const { logger, lines } = capturingLogger();

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connectNats({ servers: nats.url }, { name: 'verification-outage-test', maxReconnectAttempts: -1, reconnectTimeWait: 250 });
  dir = await tempDir('hub-verification-outage-');
});

afterAll(async () => {
  await hub?.stop();
  await nc?.close();
  await subscriber?.close();
  await nats?.dispose();
  await dir?.remove();
});

/** The hub of this file, started by its first test, and its subscriber. */
async function runningHub(): Promise<RunningHub> {
  if (hub) return hub;
  const pki = await createTestPki();
  subscriber = await Subscriber.start(pki);
  await publishReviews(await NatsDatasetStore.open(nc, 1), 81);
  const follower = new TestFollower();
  follower.publish(snapshotFor(81));
  hub = await startHub({ pki, dataDir: dir.path, follower, logger, nats: { nc, ackWaitMs: 5_000, deliveryConcurrency: 2 } });
  return hub;
}

describe('a verification answered while NATS restarts', () => {
  it.each(['subscribe', 'unsubscribe'] as const)('is recorded once NATS is back (%s)', async (mode) => {
    const hub = await runningHub();
    const name = 'restart';
    const form = { 'hub.mode': mode, 'hub.topic': TOPIC_URLS.reviews, 'hub.callback': subscriber.url(name) };
    const stored = async () => (await hub.store.list()).some((s) => s.callback === subscriber.url(name));

    if (mode === 'unsubscribe') {
      // Something to unsubscribe from, made while NATS is up.
      subscriber.behave(name, (req) => (req.query.has('hub.challenge') ? 'echo' : { status: 204 }));
      expect((await hub.post({ ...form, 'hub.mode': 'subscribe' })).status).toBe(202);
      await waitFor(stored, 10_000, 'the subscription to remove');
    }
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => (answer = resolve));
    const before = subscriber.verifications(name).length;
    subscriber.behave(name, (req) => (req.query.has('hub.challenge') ? { status: 200, body: req.query.get('hub.challenge')!, answerWhen: answered } : { status: 204 }));
    expect((await hub.post(form)).status).toBe(202);
    await waitFor(() => subscriber.verifications(name).length > before, 10_000, 'the challenge');

    // The subscriber confirms while NATS is away; the hub cannot write what it confirmed.
    await nats.stop();
    answer();
    // Its first write failed: retried (or, as it once was, given up as a crash).
    await waitFor(() => lines.some((line) => ['recording a verified request failed; retrying until its deadline', 'verification crashed'].includes(line.msg)), 20_000, 'a failed write');
    lines.splice(0);
    await nats.start();
    await waitFor(async () => (await stored().catch(() => null)) === (mode === 'subscribe'), 30_000, `the ${mode} recorded`);
  }, 60_000);
});

const RETRYING_READ = "reading the subscription before its verification failed; retrying until the request's deadline";

describe('a request accepted while NATS hangs', () => {
  it.each(['subscribe', 'unsubscribe'] as const)('is verified and recorded once NATS answers again (%s)', async (mode) => {
    const hub = await runningHub();
    const name = `hang-${mode}`;
    const form = { 'hub.mode': mode, 'hub.topic': TOPIC_URLS.reviews, 'hub.callback': subscriber.url(name) };
    const storedNamed = async (callbackName: string) => (await hub.store.list()).some((s) => s.callback === subscriber.url(callbackName));
    // Made while NATS is up: the subscription an unsubscribe removes; for a subscribe, another one, so
    // that the hub has counted its subscriptions (it then counts again in the background).
    const first = mode === 'unsubscribe' ? name : `${name}-first`;
    expect((await hub.post({ ...form, 'hub.mode': 'subscribe', 'hub.callback': subscriber.url(first) })).status).toBe(202);
    await waitFor(() => storedNamed(first), 10_000, 'the first subscription');
    lines.splice(0);

    await nats.freeze();
    try {
      expect((await hub.post(form)).status).toBe(202);
      // The read times out after the client's 5 s, well before the ~20 s it takes to see the connection dead.
      await waitFor(() => lines.some((line) => line.msg === RETRYING_READ), 15_000, 'the read before the verification to time out');
      expect(subscriber.verifications(name).filter((v) => v.query.get('hub.mode') === mode)).toEqual([]);
    } finally {
      nats.thaw();
    }
    await waitFor(() => subscriber.verifications(name).some((v) => v.query.get('hub.mode') === mode), 20_000, `the ${mode} challenge`);
    await waitFor(async () => (await storedNamed(name).catch(() => null)) === (mode === 'subscribe'), 20_000, `the ${mode} recorded`);
    expect(lines.map((line) => line.msg)).toContain(RETRYING_READ);
    expect(lines.filter((line) => line.level >= 50).map((line) => line.msg)).toEqual([]);
  }, 60_000);
});
