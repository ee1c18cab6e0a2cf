import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { runStandaloneToExit, SAMPLE_DATASET } from './harness.js';

/** Design card §8: invalid configuration stops the process at start with a message naming the variable. */
let dataDir: string;
beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'conformance-startup-'));
});
afterAll(() => rm(dataDir, { recursive: true, force: true }));

describe('standalone start-up with invalid configuration', () => {
  it.each([
    ['MCP_ALLOWED_ORIGINS', 'not-an-origin'],
    ['MCP_SESSION_SECRET', 'too-short'],
    ['PORT', 'eighty'],
    ['WEBSUB_RETRY_DELAYS_MS', '1,,2'],
  ])('%s=%s: exit 1 with a message naming the variable, no stack trace', async (name, value) => {
    const { code, stderr } = await runStandaloneToExit({ DATASET_FILE: SAMPLE_DATASET, DATA_DIR: dataDir, [name]: value });
    expect(code).toBe(1);
    expect(stderr).toMatch(new RegExp(`^standalone: invalid configuration:\\n  - ${name}: `));
    expect(stderr).not.toMatch(/\n\s+at /);
  });
});
