import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { eventually } from '../../../test/support/eventually.js';
import { startNatsServer, type NatsServerHandle } from '../../../test/support/nats-server.js';
import type { DeliveryJob, JobQueue } from '../src/queue/job-queue.js';
import { createNatsJobQueue, DELIVERY_CONSUMER, DELIVERY_STREAM } from '../src/queue/nats-queue.js';
import { expectOneOutageLogged, WARN } from './outage-lines.js';
import { capturingLogger, waitFor } from './support.js';

/** Every line the delivery loop writes about pulling (failure, retries, recovery) starts with this. */
const PULLING = 'pulling delivery jobs';

let nats: NatsServerHandle;
let nc: NatsConnection;
let queue: JobQueue;
const { logger, lines } = capturingLogger();
const handled: string[] = [];

const job = (name: string): DeliveryJob => ({ subscriptionKey: name, topic: 'reviews', seq: 1, etag: `"${name}"`, enqueuedAt: Date.now() });
const pullingLines = () => lines.filter((l) => l.msg.startsWith(PULLING));

beforeAll(async () => {
  nats = await startNatsServer();
  // As in the pod (main.ts): reconnect forever; a short wait so the restart is noticed quickly.
  nc = await connect({ servers: nats.url, name: 'hub-outage-test', maxReconnectAttempts: -1, reconnectTimeWait: 100 });
  queue = await createNatsJobQueue({ js: jetstream(nc), jsm: await jetstreamManager(nc), concurrency: 2, ackWaitMs: 5_000, replicas: 1, logger });
  await queue.start(async (j) => {
    handled.push(j.subscriptionKey);
    return { done: true };
  });
});

afterAll(async () => {
  await queue?.close();
  await nc?.close();
  await nats?.dispose();
});

describe('the delivery loop while NATS is down after a graceful stop (its pull answered "server shutdown")', () => {
  it('logs one warning when pulling starts failing and one line when it works again, not one per retry', async () => {
    await queue.enqueue([job('before-outage')]);
    await waitFor(() => handled.includes('before-outage'), 10_000, 'a job delivered before the outage');

    await nats.stop();
    // At least three failed pulls, whatever level each one is logged at.
    await waitFor(() => pullingLines().length >= 3, 20_000, 'several failed pulls during the outage');
    await nats.start();
    // Publishing fails until the client has reconnected and JetStream is back; dedupe makes it one job.
    await eventually(() => queue.enqueue([job('after-outage')]), { timeoutMs: 20_000, intervalMs: 200 });
    await waitFor(() => handled.includes('after-outage'), 20_000, 'a job delivered after the outage');

    // Nothing else of the hub warned meanwhile.
    expect(lines.filter((l) => l.level >= WARN).map((l) => l.msg)).toEqual(['pulling delivery jobs failed; retrying']);
    // Logged by the first pull that works, at the latest when it hands over the job delivered above.
    expectOneOutageLogged(lines, PULLING);
  });
});

// docs/operations.md (Logs) said the loop warned during every outage; an audit killing nats-server saw no such line.
describe('the delivery loop while NATS is down after a crash (its connection dropped without a word)', () => {
  it('logs nothing of its own, as the operations guide says, and delivers again once NATS is back', async () => {
    await queue.enqueue([job('before-crash')]);
    await waitFor(() => handled.includes('before-crash'), 10_000, 'a job delivered before the crash');
    lines.splice(0);

    await nats.crash();
    // Several pulls' worth of outage: a pull that failed would have said so within a second or two.
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    await nats.start();
    await eventually(() => queue.enqueue([job('after-crash')]), { timeoutMs: 20_000, intervalMs: 200 });
    await waitFor(() => handled.includes('after-crash'), 20_000, 'a job delivered after the crash');

    expect(pullingLines()).toEqual([]);
  }, 60_000);
});

describe('the delivery loop after its consumer is deleted (by hand, or with a store NATS lost)', () => {
  it('makes the consumer again and delivers the jobs enqueued meanwhile', async () => {
    await (await jetstreamManager(nc)).consumers.delete(DELIVERY_STREAM, DELIVERY_CONSUMER);
    await queue.enqueue([job('consumer-deleted')]);
    await waitFor(() => handled.includes('consumer-deleted'), 20_000, 'a job delivered by the consumer made again');
    expect(lines.filter((l) => l.msg.includes('was gone from NATS')).map((l) => l.msg)).toEqual([
      `the delivery queue ${DELIVERY_STREAM} was gone from NATS (a store lost or deleted); made it anew`,
    ]);
  });
});

describe('the shared delivery consumer', () => {
  it('caps no number of jobs waiting out their retry delay: failing subscribers must not stall the others', async () => {
    // An older hub made it with a cap of 20,000: opening the queue again lifts it.
    const jsm = await jetstreamManager(nc);
    await jsm.consumers.update(DELIVERY_STREAM, DELIVERY_CONSUMER, { max_ack_pending: 20_000 });
    const reopened = await createNatsJobQueue({ js: jetstream(nc), jsm, concurrency: 1, ackWaitMs: 5_000, replicas: 1, logger });
    await reopened.close();
    expect((await jsm.consumers.info(DELIVERY_STREAM, DELIVERY_CONSUMER)).config.max_ack_pending).toBe(-1);
  });
});
