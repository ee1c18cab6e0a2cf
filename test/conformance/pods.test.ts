import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { createTestPki, Subscriber } from '../../services/websub-hub/test/support.js';
import { eventually } from '../support/eventually.js';
import { startNatsServer, type NatsServerHandle } from '../support/nats-server.js';
import { READ_ENDPOINTS, SAMPLE_DATASET, send, startService, startTogether, type RunningService } from './harness.js';

/**
 * The services as their pods run them (design card §2, §5, §9): `services/<name>/dist/main.js` with
 * NATS_URL pointing at a private nats-server, datasets published by the real publish CLI, one public
 * BASE_URL. Replicas must agree byte for byte, MCP sessions must cross replicas, and the hub must
 * push what the read API serves.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BASE_URL = 'https://reviews.example.com';
const SECRET = 'conformance-session-secret-0123456789';
const run = promisify(execFile);

let nats: NatsServerHandle;
let dir: string;
let subscriber: Subscriber;
const pods: Record<'readA' | 'readB' | 'mcpA' | 'mcpB' | 'hub', RunningService> = {} as never;

async function publish(file: string): Promise<void> {
  await run(join(ROOT, 'node_modules/.bin/node'), [join(ROOT, 'libs/dataset-store/dist/publish-cli.js'), file], { env: { PATH: process.env.PATH ?? '', NATS_URL: nats.url }, timeout: 30_000 });
}

beforeAll(async () => {
  nats = await startNatsServer();
  dir = await mkdtemp(join(tmpdir(), 'conformance-pods-'));
  const pki = await createTestPki();
  const caFile = join(dir, 'ca.pem');
  await writeFile(caFile, pki.caPem);
  subscriber = await Subscriber.start(pki);
  await publish(SAMPLE_DATASET);
  const common = { NATS_URL: nats.url, BASE_URL };
  const started = await startTogether([
    startService('read-api', common),
    startService('read-api', common),
    startService('mcp-gateway', { ...common, MCP_SESSION_SECRET: SECRET }),
    startService('mcp-gateway', { ...common, MCP_SESSION_SECRET: SECRET }),
    startService('websub-hub', { ...common, NODE_EXTRA_CA_CERTS: caFile, WEBSUB_ALLOW_PRIVATE_CALLBACKS: 'true', WEBSUB_RETRY_DELAYS_MS: '0,50,50' }),
  ]);
  [pods.readA, pods.readB, pods.mcpA, pods.mcpB, pods.hub] = started as [RunningService, RunningService, RunningService, RunningService, RunningService];
}, 90_000);

afterAll(async () => {
  await Promise.all(Object.values(pods).map((pod) => pod.stop()));
  await subscriber?.close();
  await nats?.dispose();
  if (dir) await rm(dir, { recursive: true, force: true });
}, 30_000);

describe('read-api replicas', () => {
  // Last-Modified may differ: each replica dates what it loaded at start no earlier than its start.
  it.each(READ_ENDPOINTS)('$path: both replicas send the same status, type, ETag, Link and bytes', async ({ path, contentType }) => {
    const [a, b] = await Promise.all([send('GET', `${pods.readA.url}${path}`), send('GET', `${pods.readB.url}${path}`)]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(a.headers['content-type']).toBe(contentType);
    for (const name of ['content-type', 'etag', 'link', 'content-length']) expect([name, b.headers[name]]).toEqual([name, a.headers[name]]);
    expect(a.body.equals(b.body)).toBe(true);
    // An ETag from one replica revalidates on the other.
    expect((await send('GET', `${pods.readB.url}${path}`, { 'If-None-Match': a.headers['etag'] as string })).status).toBe(304);
  });

  it('absolute URLs come from BASE_URL, never from the request', async () => {
    const res = await send('GET', `${pods.readA.url}/reviews.json`, { Host: 'attacker.example' });
    expect(res.headers['link']).toBe(`<${BASE_URL}/api/websub/hub>; rel="hub", <${BASE_URL}/reviews.json>; rel="self"`);
    const feed = (await send('GET', `${pods.readA.url}/api/feed.json`, { Host: 'attacker.example' })).json() as { feed_url: string };
    expect(feed.feed_url).toBe(`${BASE_URL}/api/feed.json`);
  });
});

describe('mcp-gateway replicas', () => {
  it('a session started on one replica is served by the other (design card §7)', async () => {
    const headers = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
    const init = await send('POST', `${pods.mcpA.url}/mcp`, headers, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'c', version: '1' } } }));
    const sessionId = init.headers['mcp-session-id'] as string;
    const call = await send('POST', `${pods.mcpB.url}/mcp`, { ...headers, 'Mcp-Session-Id': sessionId, 'MCP-Protocol-Version': '2025-06-18' }, JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'search_reviews', arguments: { rating: 5, limit: 3 } } }));
    expect(call.status).toBe(200);
    const result = (call.json() as { result: { structuredContent: unknown } }).result.structuredContent;
    expect(result).toEqual((await send('GET', `${pods.readA.url}/api/reviews/search?rating=5&limit=3`)).json());
  });
});

describe('websub-hub pod', () => {
  it('verifies a subscription and, after a publish, pushes the bytes the read API then serves', async () => {
    const topic = `${BASE_URL}/feed.xml`;
    const form = new URLSearchParams({ 'hub.mode': 'subscribe', 'hub.topic': topic, 'hub.callback': subscriber.url('pod') }).toString();
    expect((await send('POST', `${pods.hub.url}/api/websub/hub`, { 'Content-Type': 'application/x-www-form-urlencoded' }, form)).status).toBe(202);
    await eventually(() => subscriber.verifications('pod').length > 0);
    const dataset = JSON.parse(await readFile(SAMPLE_DATASET, 'utf8')) as { reviews: Array<{ author: string }> };
    (dataset.reviews[0] as { author: string }).author = 'Conformance Pod Reviewer';
    const changed = join(dir, 'changed.json');
    await writeFile(changed, JSON.stringify(dataset));
    await publish(changed);
    await eventually(() => subscriber.notifications('pod').length > 0, { timeoutMs: 20_000 });
    const notification = subscriber.notifications('pod')[0];
    expect(notification?.headers['content-type']).toBe('application/atom+xml');
    expect(notification?.headers['link']).toBe(`<${BASE_URL}/api/websub/hub>; rel="hub", <${topic}>; rel="self"`);
    await eventually(async () => (await send('GET', `${pods.readA.url}/feed.xml`)).text().includes('Conformance Pod Reviewer'));
    const served = await send('GET', `${pods.readA.url}/feed.xml`);
    expect(notification?.body.equals(served.body)).toBe(true);
  }, 60_000);
});
