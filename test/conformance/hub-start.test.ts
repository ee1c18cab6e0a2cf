import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from '@jest/globals';
import { createTestPki, Subscriber } from '../../services/websub-hub/test/support.js';
import { eventually } from '../support/eventually.js';
import { startNatsServer, type NatsServerHandle } from '../support/nats-server.js';
import { SAMPLE_DATASET, send, startService, type RunningService } from './harness.js';

/**
 * A websub-hub pod keeps its subscriptions and delivery work in NATS JetStream. Started while NATS
 * is away (a NATS rolling restart, an install before NATS is up), it must still serve its probes
 * and metrics, say why it is not ready, and open its state once NATS is back, without a restart.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BASE_URL = 'https://reviews.example.com';
const run = promisify(execFile);

let nats: NatsServerHandle | undefined;
let hub: RunningService | undefined;
let subscriber: Subscriber | undefined;
let dir: string | undefined;

afterAll(async () => {
  await hub?.stop();
  await subscriber?.close();
  await nats?.dispose();
  if (dir) await rm(dir, { recursive: true, force: true });
}, 30_000);

/** A sample's value in the hub's /metrics, or undefined when the series is not exported. */
async function sample(series: string): Promise<number | undefined> {
  const line = (await send('GET', `${hub!.metricsUrl}/metrics`)).text().split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('a websub-hub pod started while NATS is down', () => {
  it('serves /healthz at once, answers /readyz and subscription requests 503 saying why, and accepts subscriptions once NATS is back', async () => {
    nats = await startNatsServer();
    await nats.stop();
    dir = await mkdtemp(join(tmpdir(), 'conformance-hub-start-'));
    const pki = await createTestPki();
    const caFile = join(dir, 'ca.pem');
    await writeFile(caFile, pki.caPem);
    subscriber = await Subscriber.start(pki);
    hub = await startService('websub-hub', { NATS_URL: nats.url, BASE_URL, NODE_EXTRA_CA_CERTS: caFile, WEBSUB_ALLOW_PRIVATE_CALLBACKS: 'true' }, '/healthz');

    const notReady = await send('GET', `${hub.url}/readyz`);
    expect(notReady.status).toBe(503);
    expect((notReady.json() as { source: { detail: string } }).source.detail).toContain('websub-hub');
    const form = new URLSearchParams({ 'hub.mode': 'subscribe', 'hub.topic': `${BASE_URL}/feed.xml`, 'hub.callback': subscriber.url('after-outage') }).toString();
    const refused = await send('POST', `${hub.url}/api/websub/hub`, { 'Content-Type': 'application/x-www-form-urlencoded' }, form);
    expect([refused.status, refused.headers['retry-after'], refused.text()]).toEqual([503, '5', expect.stringContaining('not accepting requests yet')]);
    // Exported from the start, as docs/operations.md says, and the 503 counted: no websub_* series came before NATS did.
    expect(await sample('websub_requests_total{mode="none",outcome="unavailable"}')).toBe(1);
    expect(await sample('websub_requests_total{mode="subscribe",outcome="accepted"}')).toBe(0);
    expect(await sample('websub_subscriptions{state="active"}')).toBe(0);
    expect(await sample('websub_queue_depth')).toBe(0);

    await nats.start();
    await run(join(ROOT, 'node_modules/.bin/node'), [join(ROOT, 'libs/dataset-store/dist/publish-cli.js'), SAMPLE_DATASET], { env: { PATH: process.env.PATH ?? '', NATS_URL: nats.url }, timeout: 30_000 });
    await eventually(async () => (await send('GET', `${hub!.url}/readyz`)).status === 200, { timeoutMs: 30_000 });
    expect((await send('POST', `${hub.url}/api/websub/hub`, { 'Content-Type': 'application/x-www-form-urlencoded' }, form)).status).toBe(202);
    expect(await sample('websub_requests_total{mode="subscribe",outcome="accepted"}')).toBe(1);
    await eventually(() => subscriber!.verifications('after-outage').length > 0);
    // The gauges registered before NATS came read the store the hub opened since.
    await eventually(async () => (await sample('websub_subscriptions{state="active"}')) === 1);
  }, 90_000);
});
