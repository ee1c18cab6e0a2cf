import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, it, expect, afterEach } from '@jest/globals';
import { pino } from 'pino';
import { buildSnapshotFromInput, contentHash, datasetVersion, type DatasetInput, type Snapshot } from '@reviews/domain';
import { createMetrics } from '@reviews/runtime';
import { FileDatasetSource, followSnapshots, type DatasetSource, type OnDataset, type SnapshotFollower } from '@reviews/dataset-store';
import { buildDataset } from '../../domain/test/fixtures.js';
import { waitFor } from '../../../test/support/eventually.js';

const BASE_URL = 'https://reviews.example.com';

function capturingLogger() {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      callback();
    },
  });
  return { logger: pino({ level: 'info' }, stream), lines };
}

const valid = (seed: number) => JSON.stringify(buildDataset({ reviews: 8, seed }));

/** Dating tests stamp versions in 2025 and 2026: dating nothing before the follower began would mask them. */
const LONG_AGO = new Date('2000-01-01T00:00:00Z');

describe('followSnapshots', () => {
  let cleanup: (() => Promise<void>) | null = null;
  afterEach(async () => {
    await cleanup?.();
    cleanup = null;
  });

  async function follow(initial: string | null) {
    const dir = await mkdtemp(join(tmpdir(), 'follow-'));
    const file = join(dir, 'dataset.json');
    if (initial !== null) await writeFile(file, initial);
    const { logger, lines } = capturingLogger();
    const metrics = createMetrics();
    const follower: SnapshotFollower = await followSnapshots(new FileDatasetSource(file, { logger, debounceMs: 20 }), { baseUrl: BASE_URL, logger, metrics, service: 'test' });
    cleanup = async () => {
      await follower.close();
      await rm(dir, { recursive: true, force: true });
    };
    return { file, follower, metrics, lines };
  }

  it('serves a valid dataset and records the dataset metrics', async () => {
    const { follower, metrics } = await follow(valid(1));
    const snapshot = follower.current();
    expect(snapshot).not.toBeNull();
    expect(snapshot!.urls.base).toBe(BASE_URL);
    const health = follower.health();
    expect(health).toMatchObject({ ready: true, version: snapshot!.version, lastRejection: null, source: { connected: true } });
    const text = await metrics.registry.metrics();
    expect(text).toContain(`dataset_info{service="test",version="${snapshot!.version}"} 1`);
    expect(text).toMatch(/dataset_published_timestamp_seconds\{service="test"\} \d+/);
    expect(text).toMatch(/dataset_snapshot_build_duration_seconds_count\{service="test"\} 1/);
    // The file predates the process: loading it at start is not propagation (it would record the dataset's age).
    // The series is there at 0 all the same, so rate() sees the first publish this pod follows.
    expect(text).toContain('dataset_propagation_seconds_count{service="test"} 0');
    // Refusal series exist from the start, so an alert on their increase sees the first one.
    for (const reason of ['invalid_json', 'invalid_dataset', 'build_error']) expect(text).toContain(`dataset_load_failures_total{service="test",reason="${reason}"} 0`);
  });

  it('serves from the build worker exactly what a build on this thread produces: bytes, validators, search', async () => {
    const input = buildDataset({ reviews: 60, seed: 4 });
    const { follower } = await follow(JSON.stringify(input));
    const served = follower.current()!;
    const local = buildSnapshotFromInput(input, { baseUrl: BASE_URL, publishedAt: served.publishedAt });
    for (const name of ['reviews', 'insights', 'feedJson', 'feedAtom', 'openapi'] as const) {
      const [a, b] = [served.representations[name], local.representations[name]];
      expect({ ...a, identity: a.identity.etag, gzip: a.gzip?.etag, br: a.br?.etag }).toEqual({ ...b, identity: b.identity.etag, gzip: b.gzip?.etag, br: b.br?.etag });
      for (const coding of ['identity', 'gzip', 'br'] as const) {
        const body = served.representations[name][coding]?.body;
        expect(Buffer.isBuffer(body)).toBe(true);
        expect(body!.equals(local.representations[name][coding]!.body)).toBe(true);
      }
    }
    expect(served.version).toBe(local.version);
    expect(served.reviewsDocument).toEqual(local.reviewsDocument);
    expect(served.insightsDocument).toEqual(local.insightsDocument);
    expect(served.input).toEqual(local.input);
    const word = input.reviews.find((r) => r.text)!.text!.split(' ')[1]!;
    for (const params of [{ query: word, limit: 100 }, { query: word.slice(0, 2), min_rating: 3, limit: 5 }, { rating: 5, limit: 100 }]) {
      expect(served.search.search(params)).toEqual(local.search.search(params));
    }
  });

  it('swaps in a new valid dataset and tells listeners', async () => {
    const { file, follower, metrics } = await follow(valid(1));
    const first = follower.current()!;
    const swaps: Array<[Snapshot, Snapshot | null]> = [];
    follower.onSwap((next, previous) => swaps.push([next, previous]));
    await writeFile(file, valid(2));
    await waitFor(() => swaps.length === 1, 5000, 'the swap');
    expect(swaps[0]![1]).toBe(first);
    // The same version; a snapshot object of its own once the brotli variants joined it.
    expect(follower.current()!.version).toBe(swaps[0]![0].version);
    expect(follower.current()!.version).not.toBe(first.version);
    const text = await metrics.registry.metrics();
    expect(text).not.toContain(`version="${first.version}"`);
    expect(text).toMatch(/dataset_propagation_seconds_count\{service="test"\} 1/);
  });

  it('swaps a new version in before its brotli variants, then adds exactly the variants a full build makes', async () => {
    const { file, follower } = await follow(valid(1));
    const swapped: Snapshot[] = [];
    follower.onSwap((next) => swapped.push(next));
    const input = buildDataset({ reviews: 60, seed: 5 });
    await writeFile(file, JSON.stringify(input));
    await waitFor(() => swapped.length === 1, 5000, 'the swap');
    expect(Object.values(swapped[0]!.representations).some((r) => r.br === null)).toBe(true);
    const complete = () => Object.values(follower.current()!.representations).every((r) => r.br !== null);
    await waitFor(complete, 5000, 'the brotli variants');
    const served = follower.current()!;
    expect(served.version).toBe(swapped[0]!.version);
    expect(served.search).toBe(swapped[0]!.search);
    const local = buildSnapshotFromInput(input, { baseUrl: BASE_URL, publishedAt: served.publishedAt });
    for (const name of ['reviews', 'insights', 'feedJson', 'feedAtom', 'openapi'] as const) {
      const [a, b] = [served.representations[name], local.representations[name]];
      expect(a.br!.etag).toBe(b.br!.etag);
      expect(a.br!.body.equals(b.br!.body)).toBe(true);
      // Swapped in with gzip; whatever already had brotli (unchanged bodies) kept its object.
      const atSwap = swapped[0]!.representations[name];
      expect(atSwap.gzip!.body.equals(b.gzip!.body)).toBe(true);
      if (atSwap.br !== null) expect(a).toBe(atSwap);
    }
    for (const topic of ['reviews', 'feedJson', 'feedAtom'] as const) expect(served.topic(topic)).toBe(served.representations[topic]);
    expect(swapped).toHaveLength(1);
  });

  // A publisher's clock (the NATS pointer's published_at) may run behind the previous publisher's.
  it('moves Last-Modified forward when the new version is stamped earlier than the one it replaces', async () => {
    const { follower, deliver } = await handFedFollower();
    const stamped = (content: string, publishedAt: Date) => deliver(Buffer.from(content), publishedAt);
    await stamped(valid(1), new Date('2026-01-01T00:00:00Z'));
    await waitFor(() => follower.current() !== null, 5000, 'the first version');
    const first = follower.current()!.representations.reviews;
    expect(first.lastModified).toBe('Thu, 01 Jan 2026 00:00:00 GMT');
    // A client holding the first version must not be told by If-Modified-Since that this one is unmodified.
    await stamped(valid(2), new Date('2025-06-01T00:00:00Z'));
    await waitFor(() => follower.current()!.representations.reviews !== first, 5000, 'the second version');
    const second = follower.current()!.representations.reviews;
    expect(second.lastModifiedMs).toBeGreaterThan(first.lastModifiedMs);
    expect(second.lastModifiedMs).toBeLessThanOrEqual(Date.now());
    expect(Date.parse(second.lastModified)).toBe(second.lastModifiedMs);
    expect(second.lastModifiedShared).toBe(false);
    expect(follower.current()!.publishedAt).toEqual(new Date('2025-06-01T00:00:00Z'));
  });

  /** A follower fed by the test, each version stamped with the publish time the test gives (`servingSince` null: the follower's default). */
  async function handFedFollower(servingSince: Date | null = LONG_AGO) {
    let deliver: OnDataset = () => undefined;
    const handFed: DatasetSource = {
      subscribe: async (onDataset) => {
        deliver = onDataset;
      },
      health: () => ({ connected: true, detail: 'fed by the test' }),
      close: async () => undefined,
    };
    const { logger } = capturingLogger();
    const follower = await followSnapshots(handFed, { baseUrl: BASE_URL, logger, metrics: createMetrics(), service: 'test', ...(servingSince === null ? {} : { servingSince }) });
    cleanup = () => follower.close();
    /** Hands the follower these bytes as a version published at `publishedAt`, without waiting for it. */
    const deliverBytes = async (bytes: Buffer, publishedAt: Date) => {
      await deliver({ version: contentHash(bytes).slice(0, 32), publishedAt, bytes, canonical: false, traceparent: null });
    };
    const publish = async (input: DatasetInput, publishedAt: Date) => {
      await deliverBytes(Buffer.from(JSON.stringify(input)), publishedAt);
      await waitFor(() => follower.current()?.version === datasetVersion(input), 5000, `the version published at ${publishedAt.toISOString()}`);
      return follower.current()!;
    };
    return { follower, publish, deliver: deliverBytes };
  }

  const NAMES = ['reviews', 'insights', 'feedJson', 'feedAtom', 'openapi'] as const;
  /** The same dataset with only its analysis summary changed: insights.json changes, nothing else does. */
  const withSummary = (input: DatasetInput, summary: string): DatasetInput => ({ ...input, analysis: { ...input.analysis!, summary } });

  // The reviews of 474a7de and 6e07f22: a release that renders differently dated its bytes as the release
  // before dated the old ones, and If-Modified-Since answered 304 to clients holding the old bytes.
  it('dates no document before the follower began, however old the dataset it loads first', async () => {
    const input = buildDataset({ reviews: 40, seed: 1 });
    const told = await handFedFollower(new Date('2026-03-01T00:00:00Z'));
    const first = (await told.publish(input, new Date('2026-01-01T00:00:00Z'))).representations;
    for (const name of NAMES) expect([name, first[name].lastModified]).toEqual([name, 'Sun, 01 Mar 2026 00:00:00 GMT']);
    const second = (await told.publish(withSummary(input, 'Families praise the chapel.'), new Date('2026-04-01T00:00:00Z'))).representations;
    expect([second.insights.lastModified, second.reviews.lastModified]).toEqual(['Wed, 01 Apr 2026 00:00:00 GMT', 'Sun, 01 Mar 2026 00:00:00 GMT']);
    await told.follower.close();
    const began = Math.floor(Date.now() / 1000) * 1000;
    const byDefault = (await (await handFedFollower(null)).publish(input, new Date('2026-01-01T00:00:00Z'))).representations;
    expect(byDefault.reviews.lastModifiedMs).toBeGreaterThanOrEqual(began);
    expect(byDefault.reviews.lastModifiedMs).toBeLessThanOrEqual(Date.now());
  });

  // RFC 9110 §8.8.2: Last-Modified is when the representation was last modified, not when the dataset was.
  it('keeps the served representation, Last-Modified and all, of every document a new version leaves unchanged', async () => {
    const { follower, publish } = await handFedFollower();
    const input = buildDataset({ reviews: 40, seed: 1 });
    const first = (await publish(input, new Date('2026-01-01T00:00:00Z'))).representations;
    const second = (await publish(withSummary(input, 'Families praise the chapel.'), new Date('2026-02-01T00:00:00Z'))).representations;
    expect(second.insights.identity.etag).not.toBe(first.insights.identity.etag);
    expect(second.insights.lastModified).toBe('Sun, 01 Feb 2026 00:00:00 GMT');
    for (const name of ['reviews', 'feedJson', 'feedAtom', 'openapi'] as const) {
      expect(second[name]).toBe(first[name]);
      expect(second[name].lastModified).toBe('Thu, 01 Jan 2026 00:00:00 GMT');
    }
    // Once the new version's late brotli variants joined it, the kept representations are still the ones served.
    await waitFor(() => NAMES.every((name) => follower.current()!.representations[name].br !== null), 5000, 'the brotli variants');
    for (const name of ['reviews', 'feedJson', 'feedAtom', 'openapi'] as const) expect(follower.current()!.representations[name]).toBe(first[name]);
    expect(follower.current()!.representations.insights.lastModified).toBe('Sun, 01 Feb 2026 00:00:00 GMT');
  });

  it('dates the changed documents of a version stamped earlier than the last after every date served, not only reviews.json', async () => {
    const { publish } = await handFedFollower();
    const input = buildDataset({ reviews: 40, seed: 1 });
    await publish(input, new Date('2026-01-01T00:00:00Z'));
    // insights.json moves to February, reviews.json stays dated January.
    const second = (await publish(withSummary(input, 'Families praise the chapel.'), new Date('2026-02-01T00:00:00Z'))).representations;
    expect(second.reviews.lastModified).toBe('Thu, 01 Jan 2026 00:00:00 GMT');
    const served = Math.max(...NAMES.map((name) => second[name].lastModifiedMs));
    // Stamped between the two: a client holding February's insights must not get a 304 for the new ones.
    const third = (await publish(buildDataset({ reviews: 40, seed: 2 }), new Date('2026-01-15T00:00:00Z'))).representations;
    for (const name of ['reviews', 'insights', 'feedJson', 'feedAtom'] as const) {
      expect(third[name].identity.etag).not.toBe(second[name].identity.etag);
      expect(third[name].lastModifiedMs).toBeGreaterThan(served);
      expect(third[name].lastModifiedMs).toBeLessThanOrEqual(Date.now());
    }
    expect(third.openapi).toBe(second.openapi);
  });

  it('keeps the old snapshot when the new file is not JSON', async () => {
    const { file, follower, metrics } = await follow(valid(1));
    const first = follower.current();
    await writeFile(file, '{ "truncated": ');
    await waitFor(() => follower.health().lastRejection !== null, 5000, 'the rejection');
    expect(follower.current()).toBe(first);
    expect(follower.health().lastRejection).toContain('invalid_json');
    expect(await metrics.registry.metrics()).toContain('dataset_load_failures_total{service="test",reason="invalid_json"} 1');
  });

  it('keeps the old snapshot when the new file is not UTF-8, and says at which byte', async () => {
    const { file, follower } = await follow(valid(1));
    const first = follower.current();
    const [before, after] = valid(2).split('Author 3');
    await writeFile(file, Buffer.concat([Buffer.from(`${before}Ren`), Buffer.from([0xe9]), Buffer.from(`${after}`)]));
    await waitFor(() => follower.health().lastRejection !== null, 5000, 'the rejection');
    expect(follower.current()).toBe(first);
    expect(follower.health().lastRejection).toContain(`(invalid_json): not valid UTF-8: malformed byte sequence at byte offset ${Buffer.byteLength(`${before}Ren`)} (0xE9)`);
  });

  // A publisher's audit: /readyz said a name appeared twice without saying where; the CLI and the log did.
  it('says where a name is repeated in an object, as the CLI does', async () => {
    const { file, follower } = await follow(valid(1));
    await writeFile(file, valid(2).replace('"rating":', '"rating": 1, "rating":'));
    await waitFor(() => follower.health().lastRejection !== null, 5000, 'the rejection');
    expect(follower.health().lastRejection).toMatch(/\(invalid_json\): reviews\[0\]\.rating: this name appears twice in its object/);
  });

  it('serves a file that starts with a UTF-8 byte order mark', async () => {
    const { file, follower } = await follow(valid(1));
    await writeFile(file, `\uFEFF${valid(2)}`);
    await waitFor(() => follower.current()?.version === datasetVersion(buildDataset({ reviews: 8, seed: 2 })), 5000, 'the dataset after the byte order mark');
    expect(follower.health().lastRejection).toBeNull();
  });

  it('logs every issue of an invalid dataset with its path, keeps the old snapshot', async () => {
    const { file, follower, lines } = await follow(valid(1));
    const first = follower.current();
    const broken = buildDataset({ reviews: 8, seed: 1 }) as unknown as { reviews: Array<Record<string, unknown>> };
    broken.reviews[0]!.rating = 9;
    broken.reviews[1]!.date = '2025-02-30';
    await writeFile(file, JSON.stringify(broken));
    await waitFor(() => follower.health().lastRejection !== null, 5000, 'the rejection');
    expect(follower.current()).toBe(first);
    expect(follower.health().lastRejection).toContain('invalid_dataset');
    const paths = lines.filter((line) => line.level === 50 && typeof line.path === 'string').map((line) => line.path);
    expect(paths).toEqual(expect.arrayContaining(['reviews[0].rating', 'reviews[1].date']));
  });

  it('starts not ready on an invalid file and becomes ready when a valid one appears', async () => {
    const { file, follower } = await follow('[]');
    expect(follower.current()).toBeNull();
    expect(follower.health()).toMatchObject({ ready: false, version: null });
    expect(follower.health().lastRejection).not.toBeNull();
    await writeFile(file, valid(3));
    await waitFor(() => follower.current() !== null, 5000, 'the valid dataset');
    expect(follower.health()).toMatchObject({ ready: true, lastRejection: null });
  });

  it('does not swap for the same content saved again in another layout', async () => {
    const { file, follower, metrics } = await follow(valid(1));
    const first = follower.current();
    let swaps = 0;
    follower.onSwap(() => swaps++);
    await writeFile(file, JSON.stringify(JSON.parse(valid(1)), null, 2));
    const builds = async () => Number(/dataset_snapshot_build_duration_seconds_count\{service="test"\} (\d+)/.exec(await metrics.registry.metrics())?.[1]);
    await waitFor(async () => (await builds()) === 2, 5000, 'the second build');
    expect(follower.current()).toBe(first);
    expect(swaps).toBe(0);
  });
});
