import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from '@jest/globals';
import { eventually } from '../support/eventually.js';
import { send, startService, type RunningService } from './harness.js';

/**
 * A pod whose first dataset takes long to load (100,000 reviews on a starved CPU take minutes) must
 * listen meanwhile: /healthz answers the startup and liveness probes, /readyz and the data
 * endpoints say 503 until the dataset is served. Here the first load is of 50,000 reviews (50 MB),
 * seconds of building that the probes must not wait for.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const run = promisify(execFile);

let service: RunningService | undefined;
let dir: string | undefined;

afterAll(async () => {
  await service?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
}, 30_000);

describe('a pod loading its first dataset', () => {
  it('answers its probes and says 503 with Retry-After until the dataset is served', async () => {
    dir = await mkdtemp(join(tmpdir(), 'conformance-first-load-'));
    const file = join(dir, 'dataset.json');
    await run(process.execPath, [join(ROOT, 'libs/dataset-generator/dist/cli.js'), '--reviews', '50000', '--seed', '7', '--out', file], { timeout: 60_000 });
    service = await startService('read-api', { DATASET_FILE: file }, '/healthz');

    const ready = await send('GET', `${service.url}/readyz`);
    expect([ready.status, (ready.json() as { status: string }).status]).toEqual([503, 'not_ready']);
    const document = await send('GET', `${service.url}/reviews.json`);
    expect([document.status, document.headers['retry-after'], (document.json() as { error: string }).error]).toEqual([503, '5', 'not_ready']);

    await eventually(async () => expect((await send('GET', `${service!.url}/readyz`)).status).toBe(200), { timeoutMs: 60_000, intervalMs: 200 });
    const served = await send('GET', `${service.url}/reviews.json`);
    expect(served.status).toBe(200);
    const dataset = JSON.parse((await readFile(file)).toString()) as { reviews: Array<{ verified: boolean }> };
    expect((served.json() as { reviews: unknown[] }).reviews.length).toBe(dataset.reviews.filter((review) => review.verified).length);
  }, 120_000);
});
