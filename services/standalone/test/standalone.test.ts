import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, expect, afterEach } from '@jest/globals';
import { pino } from 'pino';
import request from 'supertest';
import { FileDatasetSource, followSnapshots } from '@reviews/dataset-store';
import { createMetrics, loadConfig, startHttpService, type HttpService } from '@reviews/runtime';
import { createStandaloneApp } from '@reviews/standalone/app';
import { buildDataset } from '../../../libs/domain/test/fixtures.js';
import { waitFor } from '../../../test/support/eventually.js';

const valid = (seed: number) => JSON.stringify(buildDataset({ reviews: 30, seed }));

let running: { service: HttpService; dir: string } | null = null;
afterEach(async () => {
  if (!running) return;
  await running.service.shutdown('test done');
  await rm(running.dir, { recursive: true, force: true });
  running = null;
});

/** The standalone composition exactly as main.ts wires it, on ephemeral ports. */
async function startStandalone(initial: string) {
  const dir = await mkdtemp(join(tmpdir(), 'standalone-'));
  const file = join(dir, 'dataset.json');
  await writeFile(file, initial);
  const config = loadConfig({ DATASET_FILE: file, DATA_DIR: join(dir, 'data'), PORT: '0', METRICS_PORT: '0', BASE_URL: 'https://reviews.example.com' });
  const logger = pino({ level: 'silent' });
  const metrics = createMetrics();
  const snapshots = await followSnapshots(new FileDatasetSource(file, { logger, debounceMs: 20 }), { baseUrl: config.BASE_URL, logger, metrics, service: 'standalone' });
  const app = await createStandaloneApp({ config, logger, metrics, snapshots });
  const service = await startHttpService({ service: 'standalone', port: 0, metricsPort: 0, host: '127.0.0.1', shutdownTimeoutMs: 2000, logger, metrics, handler: app.handler, readiness: () => snapshots.health() });
  service.onClose(() => snapshots.close());
  service.onClose(() => app.close());
  running = { service, dir };
  return { url: service.url, file, service };
}

describe('standalone', () => {
  it('serves the read API and probes on one port', async () => {
    const { url } = await startStandalone(valid(1));
    expect((await request(url).get('/healthz')).status).toBe(200);
    expect((await request(url).get('/readyz')).status).toBe(200);
    const reviews = await request(url).get('/reviews.json');
    expect(reviews.status).toBe(200);
    expect(reviews.headers['content-type']).toBe('application/json');
    expect(reviews.headers['link']).toContain('<https://reviews.example.com/api/websub/hub>; rel="hub"');
    expect((await request(url).get('/api/reviews/search?rating=5')).status).toBe(200);
  });

  it('routes /mcp to the MCP gateway and /api/websub/hub to the hub, like the ingress', async () => {
    const { url } = await startStandalone(valid(1));
    const initialize = await request(url)
      .post('/mcp')
      .set('Content-Type', 'application/json')
      .set('Accept', 'application/json, text/event-stream')
      .send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'test', version: '1' } } });
    expect(initialize.status).toBe(200);
    expect(initialize.headers['mcp-session-id']).toBeTruthy();
    const plainHttpCallback = await request(url)
      .post('/api/websub/hub')
      .type('form')
      .send({ 'hub.mode': 'subscribe', 'hub.topic': 'https://reviews.example.com/feed.xml', 'hub.callback': 'http://subscriber.example/cb' });
    expect(plainHttpCallback.status).toBeGreaterThanOrEqual(400);
    expect(plainHttpCallback.status).toBeLessThan(500);
    expect((await request(url).get('/api/websub/hub/extra')).status).toBe(404);
  });

  it('reloads a changed file: new ETag, new content', async () => {
    const { url, file } = await startStandalone(valid(1));
    const before = await request(url).get('/reviews.json');
    await writeFile(file, valid(2));
    await waitFor(async () => (await request(url).get('/reviews.json')).headers['etag'] !== before.headers['etag'], 5000, 'the new ETag');
    const after = await request(url).get('/reviews.json');
    expect(after.body).not.toEqual(before.body);
  });

  it('keeps serving the old data when the file turns invalid, and says why on /readyz', async () => {
    const { url, file } = await startStandalone(valid(1));
    const before = await request(url).get('/reviews.json');
    // Written aside and renamed over: an in-place write can be read half-written (truncated), which
    // is refused as invalid JSON instead, the case this test is not about.
    await writeFile(`${file}.next`, JSON.stringify({ business: 'nope' }));
    await rename(`${file}.next`, file);
    await waitFor(async () => (await request(url).get('/readyz')).body.lastRejection !== null, 5000, 'the rejection');
    const readyz = await request(url).get('/readyz');
    expect(readyz.status).toBe(200);
    expect(readyz.body.lastRejection).toContain('invalid_dataset');
    const after = await request(url).get('/reviews.json');
    expect(after.headers['etag']).toBe(before.headers['etag']);
  });

  it('starts with an invalid file: not ready (503), no crash, ready once a valid file appears', async () => {
    const { url, file } = await startStandalone('{ broken');
    expect((await request(url).get('/healthz')).status).toBe(200);
    const readyz = await request(url).get('/readyz');
    expect(readyz.status).toBe(503);
    expect(readyz.body).toMatchObject({ status: 'not_ready', version: null });
    expect(readyz.body.lastRejection).toContain('invalid_json');
    expect((await request(url).get('/reviews.json')).status).toBe(503);
    await writeFile(file, valid(3));
    await waitFor(async () => (await request(url).get('/readyz')).status === 200, 5000, 'readiness');
    expect((await request(url).get('/reviews.json')).status).toBe(200);
  });
});
