import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startGateway, type RunningGateway } from './helpers.js';

const run = promisify(execFile);
const INSPECTOR = fileURLToPath(new URL('../../../node_modules/.bin/mcp-inspector', import.meta.url));

/** The MCP Inspector CLI as a user runs it (`npx @modelcontextprotocol/inspector --cli <url> ...`). */
async function inspect(url: string, ...args: string[]): Promise<unknown> {
  const { stdout } = await run(process.execPath, [INSPECTOR, '--cli', url, '--transport', 'http', ...args], { timeout: 20_000 });
  return JSON.parse(stdout);
}

describe('MCP Inspector CLI against the gateway', () => {
  let gateway: RunningGateway;
  beforeAll(async () => {
    gateway = await startGateway();
  });
  afterAll(() => gateway.close());

  it('lists the tools and calls search_reviews', async () => {
    const listed = (await inspect(gateway.url, '--method', 'tools/list')) as { tools: { name: string }[] };
    expect(listed.tools.map((tool) => tool.name)).toContain('search_reviews');
    const called = await inspect(gateway.url, '--method', 'tools/call', '--tool-name', 'search_reviews', '--tool-arg', 'rating=5', '--tool-arg', 'limit=2');
    expect(called).toMatchObject({ structuredContent: { returned: expect.any(Number), reviews: expect.any(Array) } });
  });
});
