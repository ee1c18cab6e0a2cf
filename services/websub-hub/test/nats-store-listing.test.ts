import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { jetstream } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { startNatsServer, type NatsServerHandle } from '../../../test/support/nats-server.js';
import { openNatsSubscriptionStore } from '../src/store/nats-store.js';
import type { SubscriptionStore } from '../src/store/subscription-store.js';
import { sampleSubscription } from './store-contract.js';

let nats: NatsServerHandle;
let nc: NatsConnection;
let store: SubscriptionStore;

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connect({ servers: nats.url });
  store = await openNatsSubscriptionStore(jetstream(nc));
});
afterAll(async () => {
  await nc?.close();
  await nats?.dispose();
});

describe('NATS subscription store listing', () => {
  // kv.keys() could wait forever when a key it lists was updated meanwhile: what a delivery recording
  // its outcome during an announcement does. The announcement, and the hub's shutdown, hung.
  it('finishes while the subscriptions it lists are being updated', async () => {
    const subscription = sampleSubscription('https://subscriber.example/cb');
    await store.update(subscription.key, () => subscription);
    for (let i = 0; i < 8; i++) {
      // The update lands while the listing's consumer is being set up.
      const updating = new Promise((resolve) => setTimeout(resolve, i % 4)).then(() => store.update(subscription.key, (cur) => (cur ? { ...cur, failures: i } : undefined)));
      const listed = await store.list();
      await updating;
      expect(listed.map((s) => s.key)).toEqual([subscription.key]);
    }
  }, 30_000);
});
