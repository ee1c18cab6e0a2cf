import { mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it, expect, beforeAll, afterAll, beforeEach, afterEach } from '@jest/globals';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { startNatsServer, type NatsServerHandle } from '../../../test/support/nats-server.js';
import { openFileSubscriptionStore, SUBSCRIPTIONS_FILE } from '../src/store/file-store.js';
import { openNatsSubscriptionStore, SUBSCRIPTIONS_BUCKET } from '../src/store/nats-store.js';
import type { SubscriptionStore } from '../src/store/subscription-store.js';
import { describeSubscriptionStoreContract, sampleSubscription } from './store-contract.js';
import { capturingLogger, KEEP_WRITES_MS, silentLogger, tempDir } from './support.js';

describeSubscriptionStoreContract('file (standalone)', async () => {
  const dir = await tempDir('websub-store-');
  const store = await openFileSubscriptionStore(dir.path);
  return {
    store,
    reopen: () => openFileSubscriptionStore(dir.path),
    dispose: async () => {
      await store.close();
      await dir.remove();
    },
  };
});

let nats: NatsServerHandle;
const connections: NatsConnection[] = [];
beforeAll(async () => {
  nats = await startNatsServer();
});
afterAll(async () => {
  await Promise.all(connections.map((nc) => nc.close()));
  await nats?.dispose();
});

describeSubscriptionStoreContract('NATS JetStream KV', async () => {
  const nc = await connect({ servers: nats.url });
  connections.push(nc);
  const store = await openNatsSubscriptionStore(jetstream(nc), { logger: silentLogger, keepWritesMs: KEEP_WRITES_MS });
  return {
    store,
    reopen: async () => {
      const other = await connect({ servers: nats.url });
      connections.push(other);
      return openNatsSubscriptionStore(jetstream(other), { logger: silentLogger, keepWritesMs: KEEP_WRITES_MS });
    },
    // Each test starts from an empty bucket.
    dispose: async () => {
      await (await new Kvm(jetstream(nc)).open(SUBSCRIPTIONS_BUCKET)).destroy();
    },
  };
});

describe('file store specifics', () => {
  let dir: { path: string; remove: () => Promise<void> };
  let store: SubscriptionStore;
  beforeEach(async () => {
    dir = await tempDir('websub-store-file-');
    store = await openFileSubscriptionStore(dir.path);
  });
  afterEach(async () => {
    await store.close();
    await dir.remove();
  });

  /** The subscription keys the file holds right now. */
  const keysOnDisk = async (): Promise<string[]> =>
    Object.keys((JSON.parse(await readFile(join(dir.path, SUBSCRIPTIONS_FILE), 'utf8')) as { subscriptions: Record<string, unknown> }).subscriptions);

  it('writes atomically (no temp file left) with owner-only permissions', async () => {
    const sub = sampleSubscription('https://e.example/cb');
    await store.update(sub.key, () => sub);
    await store.close();
    expect(await readdir(dir.path)).toEqual([SUBSCRIPTIONS_FILE]);
    expect(await keysOnDisk()).toEqual([sub.key]);
    expect((await stat(join(dir.path, SUBSCRIPTIONS_FILE))).mode & 0o777).toBe(0o600);
  });

  it('resolves each of many concurrent updates only once the file holds it', async () => {
    const subs = Array.from({ length: 40 }, (_, i) => sampleSubscription(`https://g.example/cb/${i}`));
    const onDiskWhenResolved = await Promise.all(
      subs.map(async (sub) => {
        await store.update(sub.key, () => sub);
        return (await keysOnDisk()).includes(sub.key);
      }),
    );
    expect(onDiskWhenResolved.every(Boolean)).toBe(true);
    expect(await store.list()).toHaveLength(40);
  });

  it('a write that fails rejects every update it carried and changes nothing; the next write starts afresh', async () => {
    // A directory where the store writes its temporary file: the write cannot open it.
    const blocker = join(dir.path, `${SUBSCRIPTIONS_FILE}.${process.pid}.tmp`);
    await mkdir(blocker);
    const [a, b] = [sampleSubscription('https://h.example/a'), sampleSubscription('https://h.example/b')];
    const outcomes = await Promise.allSettled([store.update(a.key, () => a), store.update(b.key, () => b)]);
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected']);
    expect(await store.list()).toEqual([]);

    // A change that throws fails alone; the updates written with it are kept.
    await rm(blocker, { recursive: true });
    const thrown = new Error('change failed');
    const mixed = await Promise.allSettled([
      store.update(a.key, () => a),
      store.update(b.key, () => {
        throw thrown;
      }),
    ]);
    expect(mixed).toEqual([{ status: 'fulfilled', value: a }, { status: 'rejected', reason: thrown }]);
    const reopened = await openFileSubscriptionStore(dir.path);
    expect(await reopened.list()).toEqual([a]);
    await reopened.close();
  });
});

describe('NATS store specifics', () => {
  it('two replicas (two connections) updating one key concurrently lose nothing', async () => {
    const [a, b] = await Promise.all([connect({ servers: nats.url }), connect({ servers: nats.url })]);
    connections.push(a, b);
    const [storeA, storeB] = await Promise.all([openNatsSubscriptionStore(jetstream(a), { logger: silentLogger, keepWritesMs: KEEP_WRITES_MS }), openNatsSubscriptionStore(jetstream(b), { logger: silentLogger, keepWritesMs: KEEP_WRITES_MS })]);
    const sub = sampleSubscription('https://f.example/cb');
    await storeA.update(sub.key, () => sub);
    await Promise.all(
      Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? storeA : storeB).update(sub.key, (cur) => (cur ? { ...cur, failures: cur.failures + 1 } : undefined))),
    );
    expect((await storeB.get(sub.key))?.failures).toBe(10);
  });

  describe('the bucket keeps writes for keepWritesMs', () => {
    const bucketMaxAgeMs = async (nc: NatsConnection) => (await (await jetstreamManager(nc)).streams.info(`KV_${SUBSCRIPTIONS_BUCKET}`)).config.max_age / 1_000_000;
    const dropBucket = async (nc: NatsConnection) => void (await (await jetstreamManager(nc)).streams.delete(`KV_${SUBSCRIPTIONS_BUCKET}`).catch(() => false));

    it('made with that age, raised from none (older hubs) or a shorter one, never lowered', async () => {
      const nc = await connect({ servers: nats.url });
      connections.push(nc);
      await dropBucket(nc);
      await openNatsSubscriptionStore(jetstream(nc), { logger: silentLogger, keepWritesMs: 3_600_000 });
      expect(await bucketMaxAgeMs(nc)).toBe(3_600_000);
      await openNatsSubscriptionStore(jetstream(nc), { logger: silentLogger, keepWritesMs: 7_200_000 });
      expect(await bucketMaxAgeMs(nc)).toBe(7_200_000);
      await openNatsSubscriptionStore(jetstream(nc), { logger: silentLogger, keepWritesMs: 3_600_000 });
      expect(await bucketMaxAgeMs(nc)).toBe(7_200_000);

      await dropBucket(nc);
      const sub = sampleSubscription('https://age.example/kept');
      await (await new Kvm(jetstream(nc)).create(SUBSCRIPTIONS_BUCKET, { history: 1 })).put(`sub.${sub.key}`, JSON.stringify(sub));
      expect(await bucketMaxAgeMs(nc)).toBe(0);
      const store = await openNatsSubscriptionStore(jetstream(nc), { logger: silentLogger, keepWritesMs: KEEP_WRITES_MS });
      expect(await bucketMaxAgeMs(nc)).toBe(KEEP_WRITES_MS);
      expect(await store.list()).toEqual([sub]);
      await dropBucket(nc);
    });

    it('a NATS user not allowed to change the bucket\'s stream gets a warning and a working store', async () => {
      const dir = await tempDir('nats-permissions-');
      const config = join(dir.path, 'nats.conf');
      await writeFile(config, `authorization { users = [
        { user: admin, password: admin }
        { user: hub, password: hub, permissions: { publish: { allow: [">"], deny: ["$JS.API.STREAM.UPDATE.>"] }, subscribe: { allow: [">"] } } }
      ] }\n`);
      const restricted = await startNatsServer(['-c', config]);
      try {
        const admin = await connect({ servers: restricted.url, user: 'admin', pass: 'admin' });
        connections.push(admin);
        await new Kvm(jetstream(admin)).create(SUBSCRIPTIONS_BUCKET, { history: 1 });
        const hub = await connect({ servers: restricted.url, user: 'hub', pass: 'hub' });
        connections.push(hub);
        const { logger, lines } = capturingLogger();
        const store = await openNatsSubscriptionStore(jetstream(hub), { logger, keepWritesMs: KEEP_WRITES_MS });
        expect(lines.filter((l) => l.level === 40).map((l) => l.msg)).toEqual([
          'could not set how long the subscription bucket keeps writes; removed subscriptions leave markers that every listing reads until it is set',
        ]);
        const sub = sampleSubscription('https://age.example/restricted');
        await store.update(sub.key, () => sub);
        expect(await store.list()).toEqual([sub]);
        await admin.close();
        await hub.close();
      } finally {
        await restricted.dispose();
        await dir.remove();
      }
    });

    // Each removal leaves a delete marker (purges stall listings on nats-server 2.9), which every
    // listing read for good: churn slowed every announcement and scrape without bound.
    it('so removed subscriptions leave nothing behind for long, and listings stay whole while markers age out', async () => {
      const nc = await connect({ servers: nats.url });
      connections.push(nc);
      await dropBucket(nc);
      const keepWritesMs = 1_500;
      const store = await openNatsSubscriptionStore(jetstream(nc), { logger: silentLogger, keepWritesMs });
      const live = Array.from({ length: 20 }, (_, i) => sampleSubscription(`https://age.example/live/${i}`));
      const removed = Array.from({ length: 100 }, (_, i) => sampleSubscription(`https://age.example/gone/${i}`));
      await Promise.all(removed.map(async (s) => {
        await store.update(s.key, () => s);
        await store.update(s.key, () => null);
      }));
      const messages = async () => (await (await jetstreamManager(nc)).streams.info(`KV_${SUBSCRIPTIONS_BUCKET}`)).state.messages;
      expect(await messages()).toBe(100);
      // The live ones are written on as deliveries record their outcomes; the markers are not.
      const deadline = Date.now() + 10_000;
      let listings = 0;
      for (let round = 0; ; round++) {
        await Promise.all(live.map((s) => store.update(s.key, (cur) => ({ ...(cur ?? s), failures: round % 3 }))));
        const listed = await store.list();
        listings++;
        expect(listed.map((s) => s.key).sort()).toEqual(live.map((s) => s.key).sort());
        if ((await messages()) === live.length) break;
        if (Date.now() > deadline) throw new Error(`markers still in the bucket after 10 s (${await messages()} messages)`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(listings).toBeGreaterThan(5);
      await dropBucket(nc);
    }, 20_000);
  });

  // NATS back without its store, or the bucket deleted by hand: a running hub used to fail every operation until restarted.
  it('a bucket deleted under running stores is made again by the operations that find it gone', async () => {
    const nc = await connect({ servers: nats.url });
    connections.push(nc);
    const { logger, lines } = capturingLogger();
    const store = await openNatsSubscriptionStore(jetstream(nc), { logger, keepWritesMs: KEEP_WRITES_MS });
    const [before, after] = [sampleSubscription('https://i.example/before'), sampleSubscription('https://i.example/after')];
    await store.update(before.key, () => before);

    await (await new Kvm(jetstream(nc)).open(SUBSCRIPTIONS_BUCKET)).destroy();
    const [stored, listed, missing] = await Promise.all([store.update(after.key, () => after), store.list(), store.get(before.key)]);
    expect(stored).toEqual(after);
    expect(listed.filter((s) => s.key === before.key)).toEqual([]);
    expect(missing).toBeNull();
    expect(await store.list()).toEqual([after]);
    expect(lines.filter((l) => l.msg.includes('was gone from NATS')).map((l) => l.msg)).toEqual([
      `the subscription bucket ${SUBSCRIPTIONS_BUCKET} was gone from NATS (a store lost or deleted); made it anew`,
    ]);
    await (await new Kvm(jetstream(nc)).open(SUBSCRIPTIONS_BUCKET)).destroy();
  });
});
