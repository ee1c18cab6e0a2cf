import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { NatsDatasetStore } from '@reviews/dataset-store';
import { buildDataset } from '../../domain/test/fixtures.js';
import { startNatsServer, type NatsServerHandle } from '../../../test/support/nats-server.js';

/**
 * nats-server 2.9.10 never gave back, in its count of the account's storage, the space a purge by subject
 * freed: a soak read 87 MB used for 10 MB held, and at an account or server limit every write (publishes,
 * the hub's subscriptions) failed with "insufficient resources".
 */
describe("pruning old datasets gives their space back to the account's storage count (real nats-server)", () => {
  let server: NatsServerHandle;
  let nc: NatsConnection;
  let jsm: JetStreamManager;

  beforeAll(async () => {
    server = await startNatsServer();
    nc = await connect({ servers: server.url });
    jsm = await jetstreamManager(nc);
  });

  afterAll(async () => {
    await nc?.close();
    await server?.dispose();
  });

  it('counts no more than the streams hold after publishes that pruned older versions', async () => {
    const store = await NatsDatasetStore.open(nc, 1);
    let published = 0;
    for (let seed = 1; seed <= 9; seed++) published += (await store.publish(buildDataset({ reviews: 600, seed }))).pointer.size;
    const held = (await jsm.streams.list().next()).reduce((sum, stream) => sum + stream.state.bytes, 0);
    const counted = (await jsm.getAccountInfo()).storage;
    // Four of the nine versions were pruned: purged by subject, their ~1.5 MB stayed counted.
    expect(published - held).toBeGreaterThan(1_000_000);
    expect(counted - held).toBeLessThan(50_000);
  }, 60_000);
});
