import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { get, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import { pino } from 'pino';
import { buildSnapshotFromInput, type DatasetInput } from '@reviews/domain';
import { followSnapshots, openDatasetSource, POINTER_BUCKET, POINTER_KEY, PUBLISH_EXIT, runPublishCli, type SnapshotFollower } from '@reviews/dataset-store';
import { createHttpServer, createMetrics, type Metrics } from '@reviews/runtime';
import { createReadApi, SERVICE } from '@reviews/read-api';
import { buildDataset } from '../libs/domain/test/fixtures.js';
import { eventually } from './support/eventually.js';
import { startNatsServer, type NatsServerHandle } from './support/nats-server.js';

const BASE_URL = 'https://reviews.example.com';
const silent = pino({ level: 'silent' });

interface Instance {
  readonly follower: SnapshotFollower;
  readonly metrics: Metrics;
  readonly server: Server;
  readonly port: number;
}

/** One read-api replica as its pod runs it (openDatasetSource with NATS_URL), in-process on an ephemeral port. */
async function startInstance(natsUrl: string): Promise<Instance> {
  const metrics = createMetrics();
  const config = { NATS_URL: natsUrl, NATS_REPLICAS: 1, DATASET_FILE: 'unused-with-nats.json' };
  const source = await openDatasetSource(config, { logger: silent, metrics, service: SERVICE });
  const follower = await followSnapshots(source, { baseUrl: BASE_URL, logger: silent, metrics, service: SERVICE });
  const server = createHttpServer(createReadApi({ logger: silent, metrics, snapshots: follower }));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { follower, metrics, server, port: (server.address() as AddressInfo).port };
}

async function stopInstance(instance: Instance): Promise<void> {
  await new Promise<void>((resolve) => {
    instance.server.close(() => resolve());
    instance.server.closeAllConnections();
  });
  await instance.follower.close();
}

/** Status and ETag of GET /reviews.json, identity coding, fresh connection. */
function reviewsEtag(instance: Instance): Promise<{ status: number; etag: string | undefined }> {
  return new Promise((resolve, reject) => {
    const request = get({ host: '127.0.0.1', port: instance.port, path: '/reviews.json', agent: false, headers: { 'accept-encoding': 'identity' }, timeout: 2_000 }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, etag: res.headers.etag }));
    });
    request.on('timeout', () => request.destroy(new Error('request timed out')));
    request.on('error', reject);
  });
}

const etagCache = new Map<DatasetInput, string>();
/** The ETag every replica must agree on: representations are deterministic per content. */
function expectedEtag(input: DatasetInput): string {
  let etag = etagCache.get(input);
  if (etag === undefined) {
    etag = buildSnapshotFromInput(input, { baseUrl: BASE_URL, publishedAt: new Date() }).representations.reviews.identity.etag;
    etagCache.set(input, etag);
  }
  return etag;
}

describe('three read-api replicas following NATS', () => {
  let nats: NatsServerHandle;
  let dir: string;
  const instances: Instance[] = [];
  const v1 = buildDataset({ reviews: 25, seed: 31 });
  const v2 = buildDataset({ reviews: 35, seed: 32 });

  const publishFile = async (name: string, content: string) => {
    await writeFile(join(dir, name), content);
    const lines: string[] = [];
    const code = await runPublishCli([join(dir, name)], { NATS_URL: nats.url }, { out: (l) => lines.push(l), err: (l) => lines.push(l) });
    return { code, output: lines.join('\n') };
  };
  const etags = () => Promise.all(instances.map(reviewsEtag));
  const allServe = (etag: string) => eventually(async () => expect(await etags()).toEqual(instances.map(() => ({ status: 200, etag }))));

  beforeAll(async () => {
    nats = await startNatsServer();
    dir = await mkdtemp(join(tmpdir(), 'nats-read-api-'));
    for (let i = 0; i < 3; i++) instances.push(await startInstance(nats.url));
  });

  afterAll(async () => {
    await Promise.all(instances.map(stopInstance));
    await nats?.dispose();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('answer 503 until a dataset is published, then all serve the published ETag', async () => {
    expect((await etags()).map((r) => r.status)).toEqual([503, 503, 503]);
    const published = await publishFile('v1.json', JSON.stringify(v1));
    expect(published.code).toBe(PUBLISH_EXIT.ok);
    await allServe(expectedEtag(v1));
  });

  it('publishing the same content again changes nothing', async () => {
    const swaps: string[] = [];
    const unsubscribe = instances.map((i) => i.follower.onSwap((next) => swaps.push(next.version)));
    const again = await publishFile('v1-again.json', JSON.stringify(v1, null, 2));
    expect(again.code).toBe(PUBLISH_EXIT.ok);
    expect(again.output).toContain('already current');
    expect(await etags()).toEqual(instances.map(() => ({ status: 200, etag: expectedEtag(v1) })));
    expect(swaps).toEqual([]);
    for (const stop of unsubscribe) stop();
  });

  it('an invalid dataset is rejected by the publisher and every replica keeps the old one', async () => {
    const invalid = { ...v1, reviews: [{ ...v1.reviews[0], rating: 0 }] };
    const rejected = await publishFile('invalid.json', JSON.stringify(invalid));
    expect(rejected.code).toBe(PUBLISH_EXIT.invalidDataset);
    expect(rejected.output).toMatch(/reviews\[0\]\.rating: /);
    expect(await etags()).toEqual(instances.map(() => ({ status: 200, etag: expectedEtag(v1) })));
  });

  it('a pointer to a missing object is refused and the old dataset keeps being served', async () => {
    const nc = await connect({ servers: nats.url });
    try {
      const kv = await new Kvm(jetstream(nc)).open(POINTER_BUCKET);
      const entry = await kv.get(POINTER_KEY);
      const pointer = { version: 'gone', object: 'v/gone.json', published_at: new Date().toISOString(), sha256: 'b'.repeat(64), size: 1, traceparent: null };
      await kv.update(POINTER_KEY, JSON.stringify(pointer), entry!.revision);
      await eventually(async () => {
        for (const instance of instances) {
          const failures = await instance.metrics.registry.getSingleMetric('dataset_load_failures_total')?.get();
          expect(failures?.values).toContainEqual(expect.objectContaining({ labels: { service: SERVICE, reason: 'missing_object' }, value: 1 }));
        }
      });
      expect(await etags()).toEqual(instances.map(() => ({ status: 200, etag: expectedEtag(v1) })));
    } finally {
      await nc.close();
    }
  });

  it('keep answering while NATS is down, and converge on a version published after it restarts', async () => {
    await nats.stop();
    await eventually(() => instances.every((i) => !i.follower.health().source.connected));
    expect(await etags()).toEqual(instances.map(() => ({ status: 200, etag: expectedEtag(v1) })));

    await nats.start();
    const published = await publishFile('v2.json', JSON.stringify(v2));
    expect(published).toMatchObject({ code: PUBLISH_EXIT.ok, output: expect.stringContaining('published') });
    await allServe(expectedEtag(v2));
  });

  it('a replica started after the publish serves the latest version', async () => {
    const late = await startInstance(nats.url);
    try {
      expect(await reviewsEtag(late)).toEqual({ status: 200, etag: expectedEtag(v2) });
    } finally {
      await stopInstance(late);
    }
  });
});
