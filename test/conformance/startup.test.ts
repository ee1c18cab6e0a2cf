import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { runToExit, SAMPLE_DATASET } from './harness.js';

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
    const { code, stderr } = await runToExit({ DATASET_FILE: SAMPLE_DATASET, DATA_DIR: dataDir, [name]: value });
    expect(code).toBe(1);
    expect(stderr).toMatch(new RegExp(`^standalone: invalid configuration:\\n  - ${name}: `));
    expect(stderr).not.toMatch(/\n\s+at /);
  });
});

describe('standalone start-up where the configuration meets the machine', () => {
  it('PORT taken by another process: exit 1 naming PORT, no stack trace', async () => {
    const taken = createServer();
    taken.listen(0, '127.0.0.1');
    await once(taken, 'listening');
    try {
      const { port } = taken.address() as AddressInfo;
      const { code, stderr } = await runToExit({ DATASET_FILE: SAMPLE_DATASET, DATA_DIR: dataDir, HOST: '127.0.0.1', PORT: String(port) });
      expect([code, stderr]).toEqual([1, `standalone: invalid configuration:\n  - PORT: port ${port} on 127.0.0.1 is already in use (another process listens there)\n`]);
    } finally {
      taken.close();
    }
  });

  it('HOST not an address of this machine: exit 1 naming HOST', async () => {
    const { code, stderr } = await runToExit({ DATASET_FILE: SAMPLE_DATASET, DATA_DIR: dataDir, HOST: '192.0.2.1' });
    expect([code, stderr]).toEqual([1, 'standalone: invalid configuration:\n  - HOST: 192.0.2.1 is not an address of this host (EADDRNOTAVAIL); unset, the service listens on every interface\n']);
  });

  it.each([
    ['MCP session secret', {}],
    ['WebSub subscriptions', { MCP_SESSION_SECRET: 'a'.repeat(32) }],
  ])('DATA_DIR that cannot hold the %s: exit 1 naming DATA_DIR', async (what, env) => {
    const notADirectory = join(dataDir, 'a-file');
    await writeFile(notADirectory, '');
    const { code, stderr } = await runToExit({ DATASET_FILE: SAMPLE_DATASET, DATA_DIR: notADirectory, ...env });
    expect(code).toBe(1);
    expect(stderr).toMatch(new RegExp(`^standalone: invalid configuration:\\n  - DATA_DIR: .*${what}.* \\(E[A-Z]+\\); give a directory this process can write`));
    expect(stderr).not.toMatch(/\n\s+at /);
  });
});

describe('a pod following NATS', () => {
  it.each(['read-api', 'mcp-gateway', 'websub-hub'] as const)('%s without BASE_URL: exit 1 naming BASE_URL, before connecting', async (service) => {
    const { code, stderr } = await runToExit({ NATS_URL: 'nats://127.0.0.1:1', MCP_SESSION_SECRET: 'a'.repeat(32) }, service);
    expect([code, stderr]).toEqual([1, `${service}: invalid configuration:\n  - BASE_URL: is required with NATS_URL: every replica must build the same public URLs, and http://localhost:PORT is none a client can reach\n`]);
  });
});
