import { mkdir, readdir, readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it, expect, beforeAll, afterAll, beforeEach, afterEach } from '@jest/globals';
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { startNatsServer, type NatsServerHandle } from '../../../test/support/nats-server.js';
import { openFileSubscriptionStore, SUBSCRIPTIONS_FILE } from '../src/store/file-store.js';
import { openNatsSubscriptionStore, SUBSCRIPTIONS_BUCKET } from '../src/store/nats-store.js';
import type { SubscriptionStore } from '../src/store/subscription-store.js';
import { describeSubscriptionStoreContract, sampleSubscription } from './store-contract.js';
import { capturingLogger, silentLogger, tempDir } from './support.js';

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
  const store = await openNatsSubscriptionStore(jetstream(nc), { logger: silentLogger });
  return {
    store,
    reopen: async () => {
      const other = await connect({ servers: nats.url });
      connections.push(other);
      return openNatsSubscriptionStore(jetstream(other), { logger: silentLogger });
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
    const [storeA, storeB] = await Promise.all([openNatsSubscriptionStore(jetstream(a), { logger: silentLogger }), openNatsSubscriptionStore(jetstream(b), { logger: silentLogger })]);
    const sub = sampleSubscription('https://f.example/cb');
    await storeA.update(sub.key, () => sub);
    await Promise.all(
      Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? storeA : storeB).update(sub.key, (cur) => (cur ? { ...cur, failures: cur.failures + 1 } : undefined))),
    );
    expect((await storeB.get(sub.key))?.failures).toBe(10);
  });

  // NATS back without its store, or the bucket deleted by hand: a running hub used to fail every operation until restarted.
  it('a bucket deleted under running stores is made again by the operations that find it gone', async () => {
    const nc = await connect({ servers: nats.url });
    connections.push(nc);
    const { logger, lines } = capturingLogger();
    const store = await openNatsSubscriptionStore(jetstream(nc), { logger });
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
