import { afterEach, describe, expect, it } from '@jest/globals';
import { initializeBody, post, PROTOCOL_VERSION, startGateway, type RunningGateway } from './helpers.js';

/** MCP 2025-06-18 server/tools, Security Considerations: servers MUST rate limit tool invocations. */
let gateway: RunningGateway | null = null;
afterEach(async () => {
  await gateway?.close();
  gateway = null;
});

const getFaq = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'get_faq', arguments: {} } });
const readReviews = (id: number) => ({ jsonrpc: '2.0', id, method: 'resources/read', params: { uri: 'https://reviews.example.com/reviews.json' } });

/** A session for a client at `address` (behind one trusted proxy), then `count` more requests alternating the fast path and the SDK path. */
async function statusesFrom(running: RunningGateway, address: string, count: number): Promise<number[]> {
  const proxied = { 'X-Forwarded-For': address };
  const initialized = await post(running.url, initializeBody(), proxied);
  const session = { ...proxied, 'Mcp-Session-Id': initialized.headers.get('mcp-session-id') ?? '', 'MCP-Protocol-Version': PROTOCOL_VERSION };
  const statuses = [initialized.status];
  for (let id = 2; id <= count + 1; id++) statuses.push((await post(running.url, id % 2 === 0 ? getFaq(id) : readReviews(id), session)).status);
  return statuses;
}

describe('MCP_RATE_LIMIT_PER_MINUTE', () => {
  it('answers a client past its burst (a fifth of the minute) with 429, Retry-After and a JSON-RPC error, while other clients go on', async () => {
    // 30 a minute: a burst of 6, then one more every 2 s, which a loaded machine's 7 requests never take.
    gateway = await startGateway({ env: { MCP_RATE_LIMIT_PER_MINUTE: '30', MCP_TRUSTED_PROXY_HOPS: '1' } });
    expect(await statusesFrom(gateway, '198.51.100.1', 6)).toEqual([...Array<number>(6).fill(200), 429]);
    const refused = await post(gateway.url, getFaq(99), { 'X-Forwarded-For': '198.51.100.1' });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // Not for a cache: a 429 kept by one would refuse every client.
    expect([refused.headers.get('cache-control'), refused.headers.get('vary')]).toEqual(['no-store', 'Origin, Accept-Encoding']);
    expect(refused.json).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32000, message: expect.stringMatching(/^Too Many Requests: more than 30 MCP requests a minute from this client; retry after \d+ s$/) } });
    expect(await statusesFrom(gateway, '198.51.100.2', 2)).toEqual([200, 200, 200]);
  });

  it('does not count preflights, and does not let a client without a trusted proxy pick its address in X-Forwarded-For', async () => {
    gateway = await startGateway({ env: { MCP_RATE_LIMIT_PER_MINUTE: '10' } });
    const preflights = await Promise.all(Array.from({ length: 5 }, () => fetch(gateway!.url, { method: 'OPTIONS' })));
    expect(preflights.map((response) => response.status)).toEqual([204, 204, 204, 204, 204]);
    const statuses = [];
    for (let n = 1; n <= 3; n++) statuses.push((await post(gateway.url, initializeBody(n), { 'X-Forwarded-For': `203.0.113.${n}` })).status);
    expect(statuses).toEqual([200, 200, 429]);
  });

  it('lets an allowed browser origin read the 429 and its Retry-After, and answers a foreign origin 403 first', async () => {
    gateway = await startGateway({ env: { MCP_RATE_LIMIT_PER_MINUTE: '5' } });
    const allowed = { Origin: 'http://localhost:3000' };
    expect((await post(gateway.url, initializeBody(1), allowed)).status).toBe(200);
    const refused = await post(gateway.url, initializeBody(2), allowed);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('access-control-allow-origin')).toBe('http://localhost:3000');
    expect(refused.headers.get('access-control-expose-headers')).toContain('Retry-After');
    expect((await post(gateway.url, initializeBody(3), { Origin: 'https://evil.example' })).status).toBe(403);
  });

  it('0 turns the limit off', async () => {
    gateway = await startGateway({ env: { MCP_RATE_LIMIT_PER_MINUTE: '0' } });
    const statuses = new Set<number>();
    for (let n = 1; n <= 150; n++) statuses.add((await post(gateway.url, initializeBody(n))).status);
    expect([...statuses]).toEqual([200]);
  });
});
