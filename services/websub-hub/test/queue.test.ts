import { afterAll, beforeAll } from '@jest/globals';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { startNatsServer, type NatsServerHandle } from '../../../test/support/nats-server.js';
import { createMemoryJobQueue } from '../src/queue/memory-queue.js';
import { createNatsJobQueue, DELIVERY_STREAM } from '../src/queue/nats-queue.js';
import { describeJobQueueContract } from './queue-contract.js';
import { silentLogger } from './support.js';

describeJobQueueContract('in process (standalone)', async (concurrency) => {
  const queue = createMemoryJobQueue({ concurrency, logger: silentLogger });
  return { queue, dispose: () => queue.close() };
});

let nats: NatsServerHandle;
let nc: NatsConnection;
beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connect({ servers: nats.url });
});
afterAll(async () => {
  await nc?.close();
  await nats?.dispose();
});

describeJobQueueContract('NATS JetStream work queue', async (concurrency) => {
  const jsm = await jetstreamManager(nc);
  const queue = await createNatsJobQueue({ js: jetstream(nc), jsm, concurrency, ackWaitMs: 5_000, replicas: 1, logger: silentLogger });
  return {
    queue,
    // Each test starts from an empty stream.
    dispose: async () => {
      await queue.close();
      await jsm.streams.delete(DELIVERY_STREAM);
    },
  };
});
