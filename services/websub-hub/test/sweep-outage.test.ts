import { describe, it, beforeAll, afterAll } from '@jest/globals';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { startNatsServer, type NatsServerHandle } from '../../../test/support/nats-server.js';
import { expectOneOutageLogged, INFO } from './outage-lines.js';
import { capturingLogger, createTestPki, snapshotFor, startHub, tempDir, TestFollower, waitFor, type RunningHub } from './support.js';

/** Every line the hub writes about its periodic sweep of expired subscriptions starts with this. */
const SWEEPING = 'sweeping expired subscriptions';

let nats: NatsServerHandle;
let nc: NatsConnection;
let dir: { path: string; remove: () => Promise<void> };
let running: RunningHub;
const { logger, lines } = capturingLogger();

const sweepingLines = () => lines.filter((l) => l.msg.startsWith(SWEEPING));

beforeAll(async () => {
  nats = await startNatsServer();
  // As in the pod (main.ts): reconnect forever; a short wait so the restart is noticed quickly.
  nc = await connect({ servers: nats.url, name: 'hub-sweep-outage-test', maxReconnectAttempts: -1, reconnectTimeWait: 100 });
  dir = await tempDir('websub-sweep-outage-');
  const follower = new TestFollower();
  follower.publish(snapshotFor(1));
  // A sweep every 100 ms instead of every minute (HubLimits), so a short outage spans several.
  running = await startHub({ pki: await createTestPki(), dataDir: dir.path, follower, logger, limits: { sweepIntervalMs: 100 }, nats: { nc, ackWaitMs: 5_000, deliveryConcurrency: 2 } });
});

afterAll(async () => {
  await running?.stop();
  await nc?.close();
  await nats?.dispose();
  await dir?.remove();
});

describe('the expiry sweep while NATS is down', () => {
  it('logs one warning when sweeping starts failing and one line when it works again, not a stack trace per sweep', async () => {
    await nats.stop();
    // At least two failed sweeps (each waits out the NATS request timeout), whatever level each is logged at.
    await waitFor(() => sweepingLines().length >= 2, 20_000, 'several failed sweeps during the outage');
    await nats.start();
    await waitFor(() => sweepingLines().some((l) => l.level === INFO), 20_000, 'a sweep that works again');

    expectOneOutageLogged(lines, SWEEPING);
  }, 60_000);
});
