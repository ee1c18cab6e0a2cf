import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { datasetVersion } from '@reviews/domain';
import { createMetrics } from '@reviews/runtime';
import type { ObjectStore } from '@nats-io/obj';
import { connect } from '@nats-io/transport-node';
import { followSnapshots, NatsDatasetSource, NatsDatasetStore, PUBLISH_EXIT, runPublishCli } from '@reviews/dataset-store';
import { buildDataset } from '../../domain/test/fixtures.js';
import { eventually } from '../../../test/support/eventually.js';
import { startNatsServer, type NatsServerHandle } from '../../../test/support/nats-server.js';

const PUBLISH_CLI = new URL('../dist/publish-cli.js', import.meta.url).pathname;
const silent = pino({ level: 'silent' });

/**
 * A NATS server that hangs (SIGSTOP: it keeps its port and the kernel still accepts connections, but
 * nothing answers), as a frozen node or a wedged process does.
 */
describe('a NATS server that accepts connections but answers nothing', () => {
  const dataset = buildDataset({ reviews: 4, seed: 95 });
  let server: NatsServerHandle;
  let dir: string;
  let file: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'nats-hung-'));
    file = join(dir, 'dataset.json');
    await writeFile(file, JSON.stringify(dataset));
    server = await startNatsServer();
  });

  afterAll(async () => {
    await server?.dispose();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  // nats.js left the socket of a dial that timed out open, so the process never exited.
  it('makes the publish CLI give up and exit 3, as a CI job needs it to', async () => {
    await server.freeze();
    try {
      const child = spawn(process.execPath, [PUBLISH_CLI, file], { env: { PATH: process.env.PATH, NATS_URL: server.url }, stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
      const code = await new Promise<number | null>((resolve) => {
        const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
        child.once('exit', (exitCode) => {
          clearTimeout(killer);
          resolve(exitCode);
        });
      });
      expect({ code, stderr }).toEqual({ code: PUBLISH_EXIT.natsUnavailable, stderr: expect.stringMatching(/cannot reach NATS at nats:\/\/127\.0\.0\.1:\d+: .*timeout; nothing published/) });
    } finally {
      server.thaw();
    }
  });

  // A publisher's audit: a server that stopped answering after the upload was reported as an object that "did not read back" with its digest, as if the data were corrupt.
  it('says that reading the stored object back failed, not that it read back different, when the server hangs after the upload', async () => {
    const nc = await connect({ servers: server.url });
    try {
      const store = await NatsDatasetStore.open(nc, 1);
      const objects = (store as unknown as { buckets: { objects: ObjectStore } }).buckets.objects;
      const putBlob = objects.putBlob.bind(objects);
      objects.putBlob = async (...args) => {
        const info = await putBlob(...args);
        await server.freeze();
        return info;
      };
      const failure = await store.publish(buildDataset({ reviews: 3, seed: 96 })).then(
        () => null,
        (error: unknown) => error as Error,
      );
      expect(failure?.message).toMatch(/^object datasets\/v\/\S+\.json was stored but reading it back failed: .*; pointer not moved$/);
    } finally {
      server.thaw();
      await nc.close();
    }
  }, 30_000);

  // nats.js pings every 2 minutes and waits for two answers: /readyz and nats_connected said "connected" for ~6 minutes.
  it('is reported disconnected by a replica within about 30 s, which reconnects once the server answers', async () => {
    expect(await runPublishCli([file], { NATS_URL: server.url }, { out: () => undefined, err: () => undefined })).toBe(PUBLISH_EXIT.ok);
    const metrics = createMetrics();
    const follower = await followSnapshots(new NatsDatasetSource({ nats: { servers: server.url }, replicas: 1, service: 'hung', logger: silent, registry: metrics.registry }), {
      baseUrl: 'https://reviews.example.com',
      logger: silent,
      metrics,
      service: 'hung',
    });
    try {
      await eventually(() => follower.current()?.version === datasetVersion(dataset) && follower.health().source.connected, { timeoutMs: 15_000 });
      await server.freeze();
      const frozenAt = Date.now();
      await eventually(() => !follower.health().source.connected, { timeoutMs: 40_000, intervalMs: 200 });
      expect(Date.now() - frozenAt).toBeLessThan(35_000);
      server.thaw();
      await eventually(() => follower.health().source.connected, { timeoutMs: 20_000, intervalMs: 200 });
    } finally {
      server.thaw();
      await follower.close();
    }
  }, 90_000);
});
