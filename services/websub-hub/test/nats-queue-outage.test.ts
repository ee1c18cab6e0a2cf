import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { eventually } from '../../../test/support/eventually.js';
import { startNatsServer, type NatsServerHandle } from '../../../test/support/nats-server.js';
import type { DeliveryJob, JobQueue } from '../src/queue/job-queue.js';
import { createNatsJobQueue } from '../src/queue/nats-queue.js';
import { waitFor } from './support.js';

interface LogLine {
  readonly level: number;
  readonly msg: string;
  readonly err?: unknown;
  readonly error?: { readonly type: string; readonly message: string; readonly code?: unknown };
  readonly attempts?: number;
  readonly failedForMs?: number;
}

const WARN = 40;
const INFO = 30;
/** Every line the delivery loop writes about pulling (failure, retries, recovery) starts with this. */
const PULLING = 'pulling delivery jobs';

let nats: NatsServerHandle;
let nc: NatsConnection;
let queue: JobQueue;
const lines: LogLine[] = [];
const handled: string[] = [];

const job = (name: string): DeliveryJob => ({ subscriptionKey: name, topic: 'reviews', seq: 1, etag: `"${name}"`, enqueuedAt: Date.now() });
const pullingLines = () => lines.filter((l) => l.msg.startsWith(PULLING));

beforeAll(async () => {
  nats = await startNatsServer();
  // As in the pod (main.ts): reconnect forever; a short wait so the restart is noticed quickly.
  nc = await connect({ servers: nats.url, name: 'hub-outage-test', maxReconnectAttempts: -1, reconnectTimeWait: 100 });
  const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line) as LogLine) });
  queue = await createNatsJobQueue({ js: jetstream(nc), jsm: await jetstreamManager(nc), concurrency: 2, ackWaitMs: 5_000, logger });
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

describe('the delivery loop while NATS is down', () => {
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

    const warnings = lines.filter((l) => l.level >= WARN);
    expect(warnings.map((l) => l.msg)).toEqual(['pulling delivery jobs failed; retrying']);
    const [warning] = warnings;
    // An outage error says what failed (the server's 409 "server shutdown", "heartbeats missed"), without a stack trace.
    expect(warning?.error).toEqual(expect.objectContaining({ type: expect.any(String), message: expect.any(String) }));
    expect(JSON.stringify(warning)).not.toContain('stack');

    // Logged by the first pull that works, at the latest when it hands over the job delivered above.
    const recoveries = lines.filter((l) => l.level === INFO && l.msg.startsWith(PULLING));
    expect(recoveries).toHaveLength(1);
    expect(recoveries[0]).toMatchObject({ msg: 'pulling delivery jobs works again', attempts: expect.any(Number), failedForMs: expect.any(Number) });
    // Every failed pull of the outage is counted, and the recovery comes after the warning.
    expect(recoveries[0]?.attempts).toBe(pullingLines().filter((l) => l.level < INFO).length + 1);
    expect(lines.indexOf(recoveries[0] as LogLine)).toBeGreaterThan(lines.indexOf(warning as LogLine));
  });
});
