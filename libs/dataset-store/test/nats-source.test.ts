import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { Objm, type ObjectStore } from '@nats-io/obj';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { datasetVersion, versionOfSha256, type DatasetInput } from '@reviews/domain';
import {
  connectNats,
  DATASET_OBJECT_BUCKET,
  followSnapshots,
  NatsDatasetSource,
  NatsDatasetStore,
  OBJECT_STREAM,
  POINTER_BUCKET,
  POINTER_KEY,
  RETAINED_VERSIONS,
  sha256Hex,
  type DatasetPointer,
  type PublishedDataset,
  type SnapshotFollower,
} from '@reviews/dataset-store';
import { createMetrics, type Metrics } from '@reviews/runtime';
import { buildDataset } from '../../domain/test/fixtures.js';
import { eventually } from '../../../test/support/eventually.js';
import { startNatsServer, type NatsServerHandle } from '../../../test/support/nats-server.js';
import { startTcpRelay, type TcpRelay } from '../../../test/support/tcp-relay.js';

const BASE_URL = 'https://reviews.example.com';
const silent = pino({ level: 'silent' });

interface Replica {
  readonly source: NatsDatasetSource;
  readonly follower: SnapshotFollower;
  readonly metrics: Metrics;
}

async function startReplica(server: NatsServerHandle): Promise<Replica> {
  const metrics = createMetrics();
  const source = new NatsDatasetSource({ nats: { servers: server.url }, replicas: 1, service: 'test-replica', logger: silent, registry: metrics.registry });
  const follower = await followSnapshots(source, { baseUrl: BASE_URL, logger: silent, metrics, service: 'test-replica' });
  return { source, follower, metrics };
}

async function metricValue(metrics: Metrics, name: string, labels: Record<string, string>): Promise<number> {
  const metric = metrics.registry.getSingleMetric(name);
  if (!metric) return 0;
  const { values } = await metric.get();
  const match = values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l));
  return match?.value ?? 0;
}

describe('NATS dataset store and source (real nats-server)', () => {
  let server: NatsServerHandle;
  let nc: NatsConnection;
  let store: NatsDatasetStore;
  let pointers: KV;
  let objects: ObjectStore;
  let js: JetStreamClient;
  let jsm: JetStreamManager;
  const replicas: Replica[] = [];
  const v1 = buildDataset({ reviews: 30, seed: 1 });
  const v2 = buildDataset({ reviews: 40, seed: 2 });
  const v3 = buildDataset({ reviews: 50, seed: 3 });

  const versionsServed = () => replicas.map((r) => r.follower.current()?.version ?? null);
  const allServe = (input: DatasetInput) => eventually(() => expect(versionsServed()).toEqual(replicas.map(() => datasetVersion(input))));

  /** Point `current` at an object of our choosing, as a broken or hostile writer would. */
  async function forcePointer(pointer: Partial<DatasetPointer> | string): Promise<void> {
    const entry = await pointers.get(POINTER_KEY);
    const value = typeof pointer === 'string' ? pointer : JSON.stringify({ published_at: new Date().toISOString(), traceparent: null, ...pointer });
    await pointers.update(POINTER_KEY, value, entry?.revision ?? 0);
  }

  beforeAll(async () => {
    server = await startNatsServer();
    nc = await connect({ servers: server.url, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
    store = await NatsDatasetStore.open(nc, 1);
    js = jetstream(nc);
    jsm = await jetstreamManager(nc);
    pointers = await new Kvm(js).open(POINTER_BUCKET);
    objects = await new Objm(js).open(DATASET_OBJECT_BUCKET);
  });

  afterAll(async () => {
    await Promise.all(replicas.map((r) => r.follower.close()));
    await nc?.close();
    await server?.dispose();
  });

  it('starts with no pointer: nothing delivered, connected, not ready', async () => {
    for (let i = 0; i < 3; i++) replicas.push(await startReplica(server));
    for (const replica of replicas) {
      expect(replica.follower.health()).toMatchObject({ ready: false, source: { connected: true } });
      expect(await metricValue(replica.metrics, 'nats_connected', { service: 'test-replica' })).toBe(1);
    }
  });

  it('a publish reaches every replica, with the traceparent in the delivered dataset', async () => {
    const seen: PublishedDataset[] = [];
    const probe = new NatsDatasetSource({ nats: { servers: server.url }, replicas: 1, service: 'probe', logger: silent, registry: createMetrics().registry });
    await probe.subscribe((dataset) => {
      seen.push(dataset);
    });
    try {
      const outcome = await store.publish(v1, { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' });
      expect(outcome).toMatchObject({ status: 'published', version: datasetVersion(v1) });
      expect(outcome.pointer).toMatchObject({ object: `v/${datasetVersion(v1)}.json`, sha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
      await allServe(v1);
      await eventually(() => seen.length === 1);
      expect(seen[0]).toMatchObject({ version: datasetVersion(v1), traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' });
      expect(sha256Hex(seen[0]!.bytes)).toBe(outcome.pointer.sha256);
      // Five reads (the publisher's read-back, three replicas, the probe) leave no consumer behind on the
      // object stream: each would hold nats-server memory for its 5-minute inactivity threshold.
      await eventually(async () => expect(await jsm.consumers.list(`OBJ_${DATASET_OBJECT_BUCKET}`).next()).toEqual([]));
    } finally {
      await probe.close();
    }
  });

  it('generates a W3C traceparent when the publisher has no active span', async () => {
    const outcome = await store.publish(v2);
    expect(outcome.pointer.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    await allServe(v2);
  });

  it('publishing the current content again is a no-op: same pointer revision, nothing swapped', async () => {
    const before = await pointers.get(POINTER_KEY);
    const swaps: string[] = [];
    const unsubscribe = replicas[0]!.follower.onSwap((next) => swaps.push(next.version));
    const outcome = await store.publish(v2);
    expect(outcome.status).toBe('already-current');
    expect((await pointers.get(POINTER_KEY))?.revision).toBe(before?.revision);
    expect(swaps).toEqual([]);
    unsubscribe();
  });

  it('refuses a pointer to a missing object, keeps serving the previous dataset and says why in /readyz', async () => {
    // The refusal series existed at 0 before: an alert on increase() sees this first one.
    expect(await replicas[0]!.metrics.registry.metrics()).toContain('dataset_load_failures_total{service="test-replica",reason="missing_object"} 0');
    expect(replicas[0]!.follower.health().lastRejection).toBeNull();
    await forcePointer({ version: 'missing', object: 'v/missing.json', sha256: 'a'.repeat(64), size: 10 });
    await eventually(async () => (await metricValue(replicas[0]!.metrics, 'dataset_load_failures_total', { reason: 'missing_object' })) === 1);
    expect(versionsServed()).toEqual(replicas.map(() => datasetVersion(v2)));
    expect(replicas[0]!.follower.health().lastRejection).toMatch(/missing_object.*does not exist/);
  });

  it('refuses a truncated object (size and digest disagree with the pointer)', async () => {
    const bytes = Buffer.from(JSON.stringify(v3));
    await objects.putBlob({ name: 'v/truncated.json' }, bytes.subarray(0, bytes.length - 100));
    await forcePointer({ version: 'truncated', object: 'v/truncated.json', sha256: sha256Hex(bytes), size: bytes.length });
    await eventually(async () => (await metricValue(replicas[1]!.metrics, 'dataset_load_failures_total', { reason: 'digest_mismatch' })) === 1);
    expect(versionsServed()).toEqual(replicas.map(() => datasetVersion(v2)));
  });

  it('refuses an object whose content is not JSON even when the digest matches (the follower rejects it)', async () => {
    const garbage = Buffer.from('{"generated_at": "2025-01-01T00:00:00Z", "business": {');
    await objects.putBlob({ name: 'v/garbage.json' }, garbage);
    await forcePointer({ version: versionOfSha256(sha256Hex(garbage)), object: 'v/garbage.json', sha256: sha256Hex(garbage), size: garbage.length });
    await eventually(async () => (await metricValue(replicas[2]!.metrics, 'dataset_load_failures_total', { reason: 'invalid_json' })) === 1);
    expect(versionsServed()).toEqual(replicas.map(() => datasetVersion(v2)));
  });

  // Running replicas keep the version they serve; one started now (a rollout, a lost node) had nothing to keep and never became ready.
  it('starts a replica while the current pointer is refused on the newest earlier version that passes, and says so in /readyz', async () => {
    const late = await startReplica(server);
    try {
      expect(late.follower.health()).toMatchObject({ ready: true, version: datasetVersion(v2), lastRejection: expect.stringMatching(/current dataset pointer \(revision \d+\) is refused; serving .* \(revision \d+\)/) });
      // It went back past the missing and the truncated object, each refused as it was.
      expect([await metricValue(late.metrics, 'dataset_load_failures_total', { reason: 'invalid_json' }), await metricValue(late.metrics, 'dataset_load_failures_total', { reason: 'digest_mismatch' }), await metricValue(late.metrics, 'dataset_load_failures_total', { reason: 'missing_object' })]).toEqual([1, 1, 1]);
      // The usual repair, publishing the good version again, leaves nothing refused to report.
      await store.publish(v2);
      await eventually(() => late.follower.health().lastRejection === null);
    } finally {
      await late.follower.close();
    }
  });

  it("refuses a pointer whose version is not the object's content hash (the version replicas would serve)", async () => {
    const bytes = Buffer.from(JSON.stringify(v3));
    await objects.putBlob({ name: 'v/mislabelled.json' }, bytes);
    await forcePointer({ version: datasetVersion(v1), object: 'v/mislabelled.json', sha256: sha256Hex(bytes), size: bytes.length });
    await eventually(async () => (await metricValue(replicas[0]!.metrics, 'dataset_load_failures_total', { reason: 'digest_mismatch' })) === 1);
    expect(versionsServed()).toEqual(replicas.map(() => datasetVersion(v2)));
  });

  describe('an object whose chunks disagree with its own metadata record', () => {
    /** Stores `bytes` as an object, lets `tamper` rewrite its chunks, and points `current` at it as if intact. */
    async function pointAtTampered(name: string, bytes: Buffer, tamper: (chunkSubject: string) => Promise<void>): Promise<void> {
      const info = await objects.putBlob({ name }, bytes);
      const chunkSubject = `$O.${DATASET_OBJECT_BUCKET}.C.${info.nuid}`;
      await jsm.streams.purge(`OBJ_${DATASET_OBJECT_BUCKET}`, { filter: chunkSubject });
      await tamper(chunkSubject);
      await forcePointer({ version: versionOfSha256(sha256Hex(bytes)), object: name, sha256: sha256Hex(bytes), size: bytes.length });
    }

    it('refuses one whose chunk was replaced by other bytes of the same length as corrupt_object, naming both digests', async () => {
      const bytes = Buffer.from(JSON.stringify(v3));
      await pointAtTampered('v/tampered.json', bytes, async (chunkSubject) => {
        const tampered = Buffer.from(bytes);
        tampered[tampered.length - 2]! ^= 1;
        await js.publish(chunkSubject, tampered);
      });
      for (const replica of replicas) await eventually(async () => (await metricValue(replica.metrics, 'dataset_load_failures_total', { reason: 'corrupt_object' })) === 1);
      expect(versionsServed()).toEqual(replicas.map(() => datasetVersion(v2)));
      expect(replicas[0]!.follower.health().lastRejection).toMatch(new RegExp(`corrupt_object.*v/tampered.json is corrupt: it reads ${bytes.length} bytes with SHA-256 [0-9a-f]{64}, its metadata says ${bytes.length} bytes with ${sha256Hex(bytes)}`));
    });

    it('refuses one whose chunks are gone while its metadata record stays as corrupt_object, not as a read to retry forever', async () => {
      await pointAtTampered('v/chunkless.json', Buffer.from(JSON.stringify(v1)), async () => undefined);
      for (const replica of replicas) await eventually(async () => (await metricValue(replica.metrics, 'dataset_load_failures_total', { reason: 'corrupt_object' })) === 2);
      expect(replicas[1]!.follower.health().lastRejection).toMatch(/corrupt_object.*v\/chunkless.json is corrupt: it has 0 of the 1 chunks its metadata record lists/);
      expect(versionsServed()).toEqual(replicas.map(() => datasetVersion(v2)));
    });
  });

  it('refuses a malformed pointer value; the next publish repairs it', async () => {
    await forcePointer('this is not a pointer');
    await eventually(async () => (await metricValue(replicas[0]!.metrics, 'dataset_load_failures_total', { reason: 'invalid_pointer' })) === 1);
    expect(versionsServed()).toEqual(replicas.map(() => datasetVersion(v2)));

    const outcome = await store.publish(v3);
    expect(outcome.status).toBe('published');
    await allServe(v3);
  });

  it('keeps serving while NATS is down, reports it, and converges on a version published after the restart', async () => {
    await server.stop();
    await eventually(() => replicas.every((r) => !r.source.health().connected));
    for (const replica of replicas) {
      expect(replica.follower.health()).toMatchObject({ ready: true, version: datasetVersion(v3), source: { connected: false, detail: expect.stringContaining('disconnected') } });
      expect(await metricValue(replica.metrics, 'nats_connected', { service: 'test-replica' })).toBe(0);
    }

    await server.start();
    await eventually(() => replicas.every((r) => r.source.health().connected) && !nc.isClosed());
    // The publisher's own connection reconnects too; publishing may need JetStream a moment to recover.
    await eventually(async () => (await store.publish(v1)).version === datasetVersion(v1), { timeoutMs: 15_000, intervalMs: 250 });
    await allServe(v1);
  });

  it('a replica started after a publish serves the latest version at once', async () => {
    const late = await startReplica(server);
    try {
      expect(late.follower.current()?.version).toBe(datasetVersion(v1));
    } finally {
      await late.follower.close();
    }
  });

  it('prunes old objects only after the pointer moved, keeping the newest five', async () => {
    // A deletion cut short (here the client's own delete(), which leaves its record for good): the next prune finishes it.
    await objects.putBlob({ name: 'v/cut-short.json' }, Buffer.from('{}'));
    await objects.delete('v/cut-short.json');
    for (let seed = 10; seed < 16; seed++) await store.publish(buildDataset({ reviews: 5, seed }));
    const names = (await objects.list()).filter((o) => !o.deleted).map((o) => o.name);
    expect(names).toHaveLength(5);
    // Nor the store's record of each deletion, which would otherwise pile up one per publish for good.
    const { state } = await (await jetstreamManager(nc)).streams.info(`OBJ_${DATASET_OBJECT_BUCKET}`, { subjects_filter: `$O.${DATASET_OBJECT_BUCKET}.M.>` });
    expect(Object.keys(state.subjects ?? {})).toHaveLength(5);
    const current = await pointers.get(POINTER_KEY);
    expect(names).toContain((current!.json() as DatasetPointer).object);
  });

  it('keeps the objects of the last five versions in publish order: a version published again is recent, whatever its object\'s age', async () => {
    const objectOf = async (seed: number) => (await store.publish(buildDataset({ reviews: 5, seed }))).pointer.object;
    const published = [];
    for (let seed = 20; seed < 26; seed++) published.push(await objectOf(seed));
    // seed 21 again: its object is reused, uploaded before seeds 22-25; then one more version.
    const again = await objectOf(21);
    const last = await objectOf(26);
    const kept = new Set((await objects.list()).filter((o) => !o.deleted).map((o) => o.name));
    expect(again).toBe(published[1]);
    expect([...kept].sort()).toEqual([last, again, published[5], published[4], published[3]].sort());
  });

  // A rollback reuses an old object: a publisher pruning at the same time had it among the ones to delete.
  it('keeps the object of a version published again while another publish prunes: the pointer never names a deleted object', async () => {
    const objectOf = async (seed: number) => (await store.publish(buildDataset({ reviews: 5, seed }))).pointer.object;
    for (let round = 0; round < 8; round++) {
      const base = 100 + round * 10;
      const published = [];
      for (let seed = base; seed < base + 6; seed++) published.push(await objectOf(seed));
      // The first of these six is sixth newest now: the next publish's prune deletes it, unless it is published again.
      await Promise.all([objectOf(base + 6), store.publish(buildDataset({ reviews: 5, seed: base }))]);
      const current = (await pointers.get(POINTER_KEY))!.json() as DatasetPointer;
      const stored = new Set((await objects.list()).filter((o) => !o.deleted).map((o) => o.name));
      expect([round, stored.has(current.object)]).toEqual([round, true]);
    }
  });

  // The rollback's window: a pruner's deletion landing between the re-publisher's pointer move and its claim.
  it('moves the pointer again after storing a rolled-back object anew, so replicas that found it deleted fetch it', async () => {
    const rolledBack = buildDataset({ reviews: 5, seed: 300 });
    await store.publish(rolledBack);
    const current = buildDataset({ reviews: 5, seed: 301 });
    await store.publish(current);
    // Every replica serves the later version first: one still busy would skip to the rollback's pointer,
    // whose version it already serves, and need no object at all.
    await allServe(current);
    const refusals = () => Promise.all(replicas.map((r) => metricValue(r.metrics, 'dataset_load_failures_total', { reason: 'missing_object' })));
    const before = await refusals();
    // The publisher's own steps, with a pruner's deletion between its check of the stored object and its
    // pointer move, and the claim held until every replica has read the pointer and refused it.
    const steps = store as unknown as { storeVerified(...args: unknown[]): Promise<void>; claim(name: string): Promise<boolean> };
    const { storeVerified, claim } = steps;
    let checks = 0;
    steps.storeVerified = async (...args) => {
      await storeVerified.apply(store, args);
      if (++checks === 1) await objects.delete(`v/${datasetVersion(rolledBack)}.json`);
    };
    steps.claim = async (name) => {
      await eventually(async () => (await refusals()).every((count, i) => count > before[i]!));
      return claim.call(store, name);
    };
    try {
      const revisionBefore = (await pointers.get(POINTER_KEY))!.revision;
      expect(await store.publish(rolledBack)).toMatchObject({ status: 'published', version: datasetVersion(rolledBack) });
      expect((await pointers.get(POINTER_KEY))!.revision).toBe(revisionBefore + 2);
      await allServe(rolledBack);
    } finally {
      delete (steps as Partial<typeof steps>).storeVerified;
      delete (steps as Partial<typeof steps>).claim;
    }
  });

  // Each publisher prunes after its own pointer move: it must not take objects that others stored and are about to point to.
  it('lets concurrent publishes finish without deleting each other\'s objects: the last five pointers all name a stored object', async () => {
    const outcomes = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => store.publish(buildDataset({ reviews: 5, seed: 40 + i }))));
    // Only losing the pointer race five times over may fail a publish, and it says so.
    for (const outcome of outcomes) if (outcome.status === 'rejected') expect(String(outcome.reason)).toMatch(/kept moving/);
    const named: string[] = [];
    for await (const entry of await pointers.history({ key: POINTER_KEY })) named.push((entry.json() as DatasetPointer).object);
    const stored = new Set((await objects.list()).filter((o) => !o.deleted).map((o) => o.name));
    expect(named.slice(-5).filter((object) => !stored.has(object))).toEqual([]);
  });
});

describe('NATS server credentials', () => {
  it('never show in /readyz or the logs: a URL with a user and password is shown with ***', async () => {
    const server = await startNatsServer();
    await server.stop();
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
    const servers = server.url.replace('nats://', 'nats://reader:s3cret-pw@');
    const source = new NatsDatasetSource({ nats: { servers }, replicas: 1, service: 'credentials', logger, registry: createMetrics().registry });
    const follower = await followSnapshots(source, { baseUrl: BASE_URL, logger, metrics: createMetrics(), service: 'credentials' });
    try {
      const { detail } = follower.health().source;
      expect(detail).toContain(`cannot reach NATS at ${server.url.replace('nats://', 'nats://***@')}`);
      expect(`${detail}\n${lines.join('')}`).not.toContain('s3cret-pw');
      expect(lines.join('')).toContain('***@');
    } finally {
      await follower.close();
    }
  });

  // Two releases on one NATS share nothing only in separate accounts: the bucket names are fixed.
  it('connects with the user and password its URL carries, and each account keeps its own dataset', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'nats-accounts-'));
    const config = join(dir, 'accounts.conf');
    await writeFile(
      config,
      'accounts {\n' +
        '  STAGING { jetstream: enabled, users: [ { user: staging, password: "st@ging pw" } ] }\n' +
        '  PRODUCTION { jetstream: enabled, users: [ { user: production, password: "pr0d" } ] }\n' +
        '}\n',
    );
    const server = await startNatsServer(['-c', config]);
    const followers: SnapshotFollower[] = [];
    try {
      const releases = [
        { url: server.url.replace('nats://', 'nats://staging:st%40ging%20pw@'), input: buildDataset({ reviews: 3, seed: 71 }) },
        { url: server.url.replace('nats://', 'nats://production:pr0d@'), input: buildDataset({ reviews: 4, seed: 72 }) },
      ];
      for (const release of releases) {
        const nc = await connectNats({ servers: release.url }, { name: 'publisher' });
        await (await NatsDatasetStore.open(nc, 1)).publish(release.input);
        await nc.close();
      }
      for (const [i, release] of releases.entries()) {
        const source = new NatsDatasetSource({ nats: { servers: release.url }, replicas: 1, service: `release-${i}`, logger: silent, registry: createMetrics().registry });
        followers.push(await followSnapshots(source, { baseUrl: BASE_URL, logger: silent, metrics: createMetrics(), service: `release-${i}` }));
      }
      await eventually(() => followers.every((f, i) => f.current()?.version === datasetVersion(releases[i]!.input)), { timeoutMs: 15_000 });
      // Without credentials the server refuses the connection, and says so in /readyz.
      const anonymous = new NatsDatasetSource({ nats: { servers: server.url }, replicas: 1, service: 'anonymous', logger: silent, registry: createMetrics().registry });
      followers.push(await followSnapshots(anonymous, { baseUrl: BASE_URL, logger: silent, metrics: createMetrics(), service: 'anonymous' }));
      expect(followers[2]!.health().source.detail).toMatch(/Authorization Violation/i);
    } finally {
      for (const follower of followers) await follower.close();
      await server.dispose();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('NATS dataset source whose reconnects the server refuses', () => {
  // An on-call drill: a pod whose credentials a restarted NATS no longer took said only "disconnected … reconnecting"
  // in /readyz, and logged a bare "NATS disconnected" every second.
  it('says why in /readyz and counts the attempts, logs the loss and the refusal once, and reconnects once allowed', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'nats-refused-'));
    const config = join(dir, 'users.conf');
    const allow = (password: string) => writeFile(config, `accounts { REVIEWS { jetstream: enabled, users: [ { user: reviews, password: "${password}" } ] } }\n`);
    await allow('first');
    const server = await startNatsServer(['-c', config]);
    const url = server.url.replace('nats://', 'nats://reviews:first@');
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
    const metrics = createMetrics();
    const source = new NatsDatasetSource({ nats: { servers: url }, replicas: 1, service: 'refused', logger, registry: metrics.registry });
    const follower = await followSnapshots(source, { baseUrl: BASE_URL, logger: silent, metrics, service: 'refused' });
    const messages = (msg: string) => lines.filter((line) => (JSON.parse(line) as { msg: string }).msg === msg);
    try {
      expect(follower.health().source.detail).toMatch(/no dataset has been published to it yet/);
      const input = buildDataset({ reviews: 3, seed: 81 });
      const publisher = await connectNats({ servers: url }, { name: 'publisher' });
      await (await NatsDatasetStore.open(publisher, 1)).publish(input);
      await publisher.close();
      await eventually(() => follower.current()?.version === datasetVersion(input), { timeoutMs: 15_000 });
      expect(follower.health().source.detail).not.toMatch(/published/);

      await server.stop();
      await allow('second');
      await server.start();
      await eventually(() => /reconnecting \(attempt ([3-9]|\d\d+), the last refused: Authorization Violation\)/i.test(follower.health().source.detail), { timeoutMs: 20_000 });
      expect(follower.health()).toMatchObject({ ready: true, source: { connected: false } });
      expect(messages('NATS disconnected')).toHaveLength(1);
      expect(messages('NATS refused to reconnect; retrying')).toEqual([expect.stringMatching(/Authorization Violation/i)]);

      await server.stop();
      await allow('first');
      await server.start();
      await eventually(() => follower.health().source.connected, { timeoutMs: 15_000 });
      expect(follower.health().source.detail).toMatch(/^connected to /);
      // nats.js reports a reconnect for each attempt the server refused, all at once when one succeeds.
      await eventually(() => follower.current() !== undefined && messages('NATS reconnected; re-reading the dataset pointer').length > 0);
      expect(messages('NATS reconnected; re-reading the dataset pointer')).toHaveLength(1);
    } finally {
      await follower.close();
      await server.dispose();
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('NATS dataset source when NATS is down at start', () => {
  it('does not crash, reports disconnected, and delivers once NATS comes up', async () => {
    const server = await startNatsServer();
    await server.stop();
    const metrics = createMetrics();
    const source = new NatsDatasetSource({ nats: { servers: server.url }, replicas: 1, service: 'cold-start', logger: silent, registry: metrics.registry });
    const follower = await followSnapshots(source, { baseUrl: BASE_URL, logger: silent, metrics, service: 'cold-start' });
    try {
      expect(follower.health()).toMatchObject({ ready: false, source: { connected: false, detail: expect.stringContaining('cannot reach NATS') } });

      await server.start();
      const publisher = await connect({ servers: server.url });
      try {
        const input = buildDataset({ reviews: 8, seed: 5 });
        await (await NatsDatasetStore.open(publisher, 1)).publish(input);
        await eventually(() => follower.current()?.version === datasetVersion(input), { timeoutMs: 15_000 });
        expect(follower.health().source.connected).toBe(true);
      } finally {
        await publisher.close();
      }
    } finally {
      await follower.close();
      await server.dispose();
    }
  });
});

// An account without JetStream (or a server without it): connected, yet no dataset can ever come.
describe('NATS dataset source on an account without JetStream', () => {
  it('says in /readyz why nothing is served, and warns once, not every second', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'nats-nojs-'));
    const config = join(dir, 'accounts.conf');
    await writeFile(config, 'accounts {\n  PLAIN { users: [ { user: plain, password: "pw" } ] }\n}\n');
    const server = await startNatsServer(['-c', config]);
    const lines: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
    const metrics = createMetrics();
    const source = new NatsDatasetSource({ nats: { servers: server.url.replace('nats://', 'nats://plain:pw@') }, replicas: 1, service: 'no-js', logger, registry: metrics.registry });
    const follower = await followSnapshots(source, { baseUrl: BASE_URL, logger, metrics, service: 'no-js' });
    try {
      await eventually(() => /cannot follow the dataset pointer \(attempt [3-9]\): .*jetstream/i.test(follower.health().source.detail), { timeoutMs: 15_000 });
      expect(follower.health()).toMatchObject({ ready: false, source: { connected: true } });
      expect(lines.filter((line) => line.includes('NATS dataset watch failed'))).toHaveLength(1);
    } finally {
      await follower.close();
      await server.dispose();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

// NATS reinstalled or its volume lost: the pointer bucket is made anew and its revisions start again at 1.
describe('NATS dataset source when NATS comes back with an empty store', () => {
  it('follows the publishes into the new store instead of skipping them as already handled', async () => {
    const server = await startNatsServer();
    const metrics = createMetrics();
    const source = new NatsDatasetSource({ nats: { servers: server.url }, replicas: 1, service: 'store-lost', logger: silent, registry: metrics.registry });
    const follower = await followSnapshots(source, { baseUrl: BASE_URL, logger: silent, metrics, service: 'store-lost' });
    const publish = async (seed: number) => {
      const publisher = await connect({ servers: server.url });
      try {
        const input = buildDataset({ reviews: 6, seed });
        await (await NatsDatasetStore.open(publisher, 1)).publish(input);
        await eventually(() => follower.current()?.version === datasetVersion(input), { timeoutMs: 15_000 });
      } finally {
        await publisher.close();
      }
    };
    try {
      for (const seed of [31, 32, 33, 34]) await publish(seed);
      await server.stop();
      await rm(server.storeDir, { recursive: true, force: true });
      await server.start();
      await publish(35);
    } finally {
      await follower.close();
      await server.dispose();
    }
  });
});

interface Relay extends TcpRelay {
  /** Cuts once `bytes` more have come from NATS (an object read under way); resolves when it has. */
  cutAfter(bytes: number): Promise<void>;
}

/** A TCP relay to NATS that the test can cut and restore: a replica out of reach while others publish. */
async function startRelay(target: string): Promise<Relay> {
  let armed: { remaining: number; cut: () => void } | null = null;
  const relay = await startTcpRelay(target, (client, upstream) => {
    upstream.on('data', (chunk: Buffer) => {
      if (armed === null) return;
      armed.remaining -= chunk.length;
      if (armed.remaining <= 0) armed.cut();
    });
    client.pipe(upstream).pipe(client);
  });
  const cutAfter = (bytes: number) =>
    new Promise<void>((resolve) => {
      armed = {
        remaining: bytes,
        cut: () => {
          armed = null;
          void relay.cut().then(resolve);
        },
      };
    });
  return { ...relay, cutAfter };
}

describe('NATS dataset source out of reach while NATS loses its store', () => {
  it('follows the new store even when its pointer reached the same revision with another dataset', async () => {
    const server = await startNatsServer();
    const relay = await startRelay(server.url);
    const metrics = createMetrics();
    const source = new NatsDatasetSource({ nats: { servers: relay.url }, replicas: 1, service: 'away', logger: silent, registry: metrics.registry });
    const follower = await followSnapshots(source, { baseUrl: BASE_URL, logger: silent, metrics, service: 'away' });
    const publish = async (seed: number): Promise<string> => {
      const publisher = await connect({ servers: server.url });
      try {
        const input = buildDataset({ reviews: 6, seed });
        await (await NatsDatasetStore.open(publisher, 1)).publish(input);
        return datasetVersion(input);
      } finally {
        await publisher.close();
      }
    };
    try {
      await publish(41);
      const before = await publish(42);
      await eventually(() => follower.current()?.version === before, { timeoutMs: 15_000 });
      await relay.cut();
      await eventually(() => !source.health().connected, { timeoutMs: 15_000 });
      // Same number of publishes into the new store: its pointer is at the same revision, 2.
      await server.stop();
      await rm(server.storeDir, { recursive: true, force: true });
      await server.start();
      await publish(43);
      const after = await publish(44);
      await relay.restore();
      await eventually(() => follower.current()?.version === after, { timeoutMs: 20_000 });
    } finally {
      await follower.close();
      await relay.cut();
      await server.dispose();
    }
  }, 60_000);
});

describe('NATS dataset source while connected', () => {
  let server: NatsServerHandle;
  let publisher: NatsConnection;
  beforeAll(async () => {
    server = await startNatsServer();
    publisher = await connect({ servers: server.url });
  });
  afterAll(async () => {
    await publisher?.close();
    await server?.dispose();
  });

  const publish = async (seed: number): Promise<string> => {
    const input = buildDataset({ reviews: 6, seed });
    await (await NatsDatasetStore.open(publisher, 1)).publish(input);
    return datasetVersion(input);
  };

  it('follows buckets an operator deleted by hand into the ones the next publish makes, though its watch never broke', async () => {
    const metrics = createMetrics();
    const source = new NatsDatasetSource({ nats: { servers: server.url }, replicas: 1, service: 'deleted-by-hand', logger: silent, registry: metrics.registry });
    const follower = await followSnapshots(source, { baseUrl: BASE_URL, logger: silent, metrics, service: 'deleted-by-hand' });
    try {
      for (const seed of [51, 52, 53]) await publish(seed);
      const before = await publish(54);
      await eventually(() => follower.current()?.version === before, { timeoutMs: 15_000 });
      const jsm = await jetstreamManager(publisher);
      await jsm.streams.delete(`KV_${POINTER_BUCKET}`);
      await jsm.streams.delete(OBJECT_STREAM);
      // The new pointer bucket's first revision, 1: below the 4 handled from the old one.
      const after = await publish(55);
      // Found by the source's checks of the pointer beside its watch (two in a row, 5 s apart).
      await eventually(() => follower.current()?.version === after, { timeoutMs: 25_000 });
      expect(source.health().connected).toBe(true);
    } finally {
      await follower.close();
    }
  });

  it('skips the versions a replica fell behind on, whose objects are pruned, without refusing any', async () => {
    const metrics = createMetrics();
    const source = new NatsDatasetSource({ nats: { servers: server.url }, replicas: 1, service: 'behind', logger: silent, registry: metrics.registry });
    const delivered: string[] = [];
    let release: () => void = () => {};
    const busy = new Promise<void>((resolve) => (release = resolve));
    await source.subscribe(async (dataset) => {
      delivered.push(dataset.version);
      // Busy building the first publish below while more publishes than objects kept go on.
      if (delivered.length === 2) await busy;
    });
    try {
      const start = delivered.at(-1);
      const first = await publish(61);
      await eventually(() => delivered.length === 2, { timeoutMs: 15_000 });
      let newest = first;
      for (let seed = 62; seed < 62 + RETAINED_VERSIONS + 2; seed++) newest = await publish(seed);
      release();
      await eventually(() => delivered.at(-1) === newest, { timeoutMs: 15_000 });
      expect(delivered).toEqual([start, first, newest]);
      expect(source.health().lastRefusal).toBeUndefined();
      expect(await metricValue(metrics, 'dataset_load_failures_total', { reason: 'missing_object' })).toBe(0);
    } finally {
      release();
      await source.close();
    }
  });
});

describe('NATS dataset source losing NATS in the middle of an object read', () => {
  it('reads the same pointer again once back, without waiting for another publish', async () => {
    const server = await startNatsServer();
    const relay = await startRelay(server.url);
    const metrics = createMetrics();
    const source = new NatsDatasetSource({ nats: { servers: relay.url }, replicas: 1, service: 'mid-read', logger: silent, registry: metrics.registry });
    const follower = await followSnapshots(source, { baseUrl: BASE_URL, logger: silent, metrics, service: 'mid-read' });
    const publisher = await connect({ servers: server.url });
    try {
      const store = await NatsDatasetStore.open(publisher, 1);
      const small = buildDataset({ reviews: 6, seed: 71 });
      await store.publish(small);
      await eventually(() => follower.current()?.version === datasetVersion(small), { timeoutMs: 15_000 });
      // Several 1 MiB chunks: the connection goes while they come.
      const large = buildDataset({ reviews: 8_000, seed: 72 });
      const cut = relay.cutAfter(512 * 1024);
      await store.publish(large);
      await cut;
      await relay.restore();
      await eventually(() => follower.current()?.version === datasetVersion(large), { timeoutMs: 30_000 });
      expect(await metricValue(metrics, 'dataset_load_failures_total', { reason: 'corrupt_object' })).toBe(0);
    } finally {
      await publisher.close();
      await follower.close();
      await relay.cut();
      await server.dispose();
    }
  }, 60_000);
});
