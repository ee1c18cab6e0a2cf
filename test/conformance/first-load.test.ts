import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from '@jest/globals';
import { eventually } from '../support/eventually.js';
import { SAMPLE_DATASET, send, startService, type RunningService } from './harness.js';

/**
 * A pod whose first dataset takes long to load (100,000 reviews on a starved CPU take minutes) must
 * listen meanwhile: /healthz answers the startup and liveness probes, /readyz and the data endpoints
 * say 503 until the dataset is served. The dataset file here is a named pipe, whose read blocks until
 * the test writes it: a first load that lasts exactly as long as the test wants.
 */
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
    const pipe = join(dir, 'dataset.json');
    await run('mkfifo', [pipe]);
    // A short drain: at shutdown the file source may be blocked reading the pipe again.
    service = await startService('read-api', { DATASET_FILE: pipe, SHUTDOWN_TIMEOUT_MS: '1000' }, '/healthz');

    const ready = await send('GET', `${service.url}/readyz`);
    expect([ready.status, (ready.json() as { status: string }).status]).toEqual([503, 'not_ready']);
    const document = await send('GET', `${service.url}/reviews.json`);
    expect([document.status, document.headers['retry-after'], (document.json() as { error: string }).error]).toEqual([503, '5', 'not_ready']);

    const dataset = await readFile(SAMPLE_DATASET);
    await writeFile(pipe, dataset);
    await eventually(async () => expect((await send('GET', `${service!.url}/readyz`)).status).toBe(200), { timeoutMs: 20_000 });
    const served = await send('GET', `${service.url}/reviews.json`);
    expect(served.status).toBe(200);
    const verified = (JSON.parse(dataset.toString()) as { reviews: Array<{ verified: boolean }> }).reviews.filter((review) => review.verified);
    expect((served.json() as { reviews: unknown[] }).reviews.length).toBe(verified.length);
  }, 60_000);
});
