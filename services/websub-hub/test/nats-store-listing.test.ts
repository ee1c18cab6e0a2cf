import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { eventually } from '../../../test/support/eventually.js';
import { startNatsServer, type NatsServerHandle } from '../../../test/support/nats-server.js';
import { openNatsSubscriptionStore, SUBSCRIPTIONS_BUCKET } from '../src/store/nats-store.js';
import type { SubscriptionStore } from '../src/store/subscription-store.js';
import { sampleSubscription } from './store-contract.js';
import { KEEP_WRITES_MS, silentLogger } from './support.js';

let nats: NatsServerHandle;
let nc: NatsConnection;
let store: SubscriptionStore;

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connect({ servers: nats.url });
  store = await openNatsSubscriptionStore(jetstream(nc), { logger: silentLogger, keepWritesMs: KEEP_WRITES_MS });
});
afterAll(async () => {
  await nc?.close();
  await nats?.dispose();
});

describe('NATS subscription store listing', () => {
  // A listing consumer could wait forever when a key it lists was updated meanwhile (nats-server 2.9
  // counts the replaced revision as pending): what a delivery recording its outcome during an
  // announcement does. The announcement, and the hub's shutdown, hung; later every such listing
  // waited for the store's 2 s stall watchdog and started again, which held a fan-out's next topic back.
  it('finishes at once, naming each subscription once, while the subscriptions it lists are being updated', async () => {
    const subscriptions = Array.from({ length: 20 }, (_, i) => sampleSubscription(`https://subscriber.example/cb/${i}`));
    await Promise.all(subscriptions.map((s) => store.update(s.key, () => s)));
    const keys = subscriptions.map((s) => s.key).sort();
    for (let i = 0; i < 8; i++) {
      // The updates land while the listing's consumer is being set up or is delivering.
      const updating = new Promise((resolve) => setTimeout(resolve, i % 4)).then(() =>
        Promise.all(subscriptions.slice(0, 5).map((s) => store.update(s.key, (cur) => (cur ? { ...cur, failures: i } : undefined)))),
      );
      const started = performance.now();
      const listed = await store.list();
      const took = performance.now() - started;
      await updating;
      expect(took).toBeLessThan(1_000);
      expect(listed.map((s) => s.key).sort()).toEqual(keys);
    }
  }, 30_000);

  // Each scrape of websub_subscriptions and each announcement lists: a consumer left per listing stayed on
  // the stream for the server's 5-minute inactivity threshold, a dozen or more per hub at all times.
  it('leaves no consumer on the bucket after listing, also when removed subscriptions left markers', async () => {
    const removed = sampleSubscription('https://subscriber.example/cb/removed');
    await store.update(removed.key, () => removed);
    await store.update(removed.key, () => null);
    for (let i = 0; i < 3; i++) expect((await store.list()).map((s) => s.key)).not.toContain(removed.key);
    // Deleted without waiting for the answer.
    const jsm = await jetstreamManager(nc);
    await eventually(async () => expect(await jsm.consumers.list(`KV_${SUBSCRIPTIONS_BUCKET}`).next()).toEqual([]));
  });

  // nats-server 2.9 moves every consumer of the stream up to a purge's marker: a listing running through
  // an operator's `nats kv purge` of one subscription skipped the keys it had yet to deliver (1,000 of 5,000).
  it('lists every subscription while one is purged, or its consumer is deleted, under it', async () => {
    const js = jetstream(nc);
    const kv = await new Kvm(js).open(SUBSCRIPTIONS_BUCKET);
    const jsm = await jetstreamManager(nc);
    const many = Array.from({ length: 4_000 }, (_, i) => sampleSubscription(`https://subscriber.example/many/${i}`));
    for (let i = 0; i < many.length; i += 200) await Promise.all(many.slice(i, i + 200).map((s) => kv.put(`sub.${s.key}`, JSON.stringify(s))));
    const purged = sampleSubscription('https://subscriber.example/purged');
    const expected = new Set([...many.map((s) => s.key), ...(await store.list()).map((s) => s.key)]);
    const interruptions: Array<() => Promise<unknown>> = [
      () => kv.purge(`sub.${purged.key}`),
      async () => {
        for (const consumer of await jsm.consumers.list(`KV_${SUBSCRIPTIONS_BUCKET}`).next()) await jsm.consumers.delete(`KV_${SUBSCRIPTIONS_BUCKET}`, consumer.name).catch(() => undefined);
      },
    ];
    for (const interrupt of [...interruptions, ...interruptions]) {
      await kv.put(`sub.${purged.key}`, JSON.stringify(purged));
      const listing = store.list();
      await new Promise((resolve) => setTimeout(resolve, 10));
      await interrupt();
      const keys = new Set((await listing).map((s) => s.key));
      expect([...expected].filter((key) => !keys.has(key))).toEqual([]);
    }
  }, 60_000);
});
