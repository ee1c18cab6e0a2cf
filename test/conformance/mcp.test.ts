import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Ajv } from 'ajv';
import formats from 'ajv-formats';
import { send, startStandalone, type RawResponse, type Standalone } from './harness.js';

/**
 * Interface spec §4.6 and MCP 2025-06-18 (basic/transports "Streamable HTTP", basic/lifecycle,
 * server/tools, JSON-RPC 2.0) against POST /mcp of the running standalone, raw and through the SDK.
 */
const VERSION = '2025-06-18';
const HEADERS = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };

let server: Standalone;
let endpoint: string;
beforeAll(async () => {
  server = await startStandalone();
  endpoint = `${server.baseUrl}/mcp`;
}, 30_000);
afterAll(() => server.stop());

type Rpc = { jsonrpc: string; id?: number | string | null; result?: Record<string, unknown>; error?: { code: number; message: string } };

const post = (body: unknown, headers: Record<string, string> = {}) =>
  send('POST', endpoint, { ...HEADERS, ...headers }, typeof body === 'string' ? body : JSON.stringify(body));
const rpc = (res: RawResponse) => res.json() as Rpc;

async function initialize(): Promise<{ res: RawResponse; sessionId: string }> {
  const res = await post({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 'conformance', version: '1.0.0' } } });
  return { res, sessionId: res.headers['mcp-session-id'] as string };
}

/** A session past the lifecycle handshake, and a caller for it. */
async function session() {
  const { sessionId } = await initialize();
  const headers = { 'Mcp-Session-Id': sessionId, 'MCP-Protocol-Version': VERSION };
  expect((await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, headers)).status).toBe(202);
  let id = 10;
  return {
    sessionId,
    call: async (method: string, params?: Record<string, unknown>) => {
      const res = await post({ jsonrpc: '2.0', id: ++id, method, ...(params ? { params } : {}) }, headers);
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('application/json');
      const body = rpc(res);
      expect(body.jsonrpc).toBe('2.0');
      expect(body.id).toBe(id);
      return body;
    },
  };
}

describe('lifecycle and transport', () => {
  it('initialize with 2025-06-18 returns that version, tools capability, serverInfo and an Mcp-Session-Id of visible ASCII', async () => {
    const { res, sessionId } = await initialize();
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/json');
    const body = rpc(res);
    expect(body).toMatchObject({ jsonrpc: '2.0', id: 1, result: { protocolVersion: VERSION, capabilities: { tools: expect.any(Object) }, serverInfo: { name: expect.any(String), version: expect.any(String) } } });
    expect(sessionId).toMatch(/^[\x21-\x7e]+$/);
    expect(res.headers['access-control-expose-headers'] ?? '').not.toContain('*');
  });

  it('notifications/initialized is 202 Accepted with no body', async () => {
    const { sessionId } = await initialize();
    const res = await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, { 'Mcp-Session-Id': sessionId });
    expect(res.status).toBe(202);
    expect(res.body.length).toBe(0);
  });

  it('ping answers an empty result', async () => {
    const { call } = await session();
    expect((await call('ping')).result).toEqual({});
  });

  it('an unknown method is JSON-RPC -32601', async () => {
    const { call } = await session();
    expect((await call('no/such/method')).error?.code).toBe(-32601);
  });

  it('a request without Mcp-Session-Id after initialize is 400', async () => {
    const res = await post({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toBe('application/json');
    expect(rpc(res)).toMatchObject({ jsonrpc: '2.0', error: { code: expect.any(Number) } });
  });

  it('an unknown or forged Mcp-Session-Id is 404', async () => {
    const { sessionId } = await initialize();
    for (const bogus of ['bogus', `${sessionId.slice(0, -2)}xx`]) {
      const res = await post({ jsonrpc: '2.0', id: 2, method: 'tools/list' }, { 'Mcp-Session-Id': bogus });
      expect([bogus, res.status]).toEqual([bogus, 404]);
      expect(res.headers['content-type']).toBe('application/json');
    }
  });

  it('GET and DELETE are 405 with Allow: POST, OPTIONS (no SSE stream offered)', async () => {
    for (const method of ['GET', 'DELETE']) {
      const res = await send(method, endpoint, { Accept: 'text/event-stream' });
      expect([method, res.status]).toEqual([method, 405]);
      expect(res.headers['allow']).toBe('POST, OPTIONS');
      expect(res.headers['content-type']).toBe('application/json');
    }
  });

  it('rejects an Accept without both media types (406), a non-JSON body (415), bad JSON (-32700) and a batch (400)', async () => {
    const body = { jsonrpc: '2.0', id: 1, method: 'ping' };
    const accept = await post(body, { Accept: 'application/json' });
    expect(accept.status).toBe(406);
    const type = await send('POST', endpoint, { Accept: HEADERS.Accept, 'Content-Type': 'text/plain' }, JSON.stringify(body));
    expect(type.status).toBe(415);
    const parse = await post('{"jsonrpc":');
    expect(parse.status).toBe(400);
    expect(rpc(parse).error?.code).toBe(-32700);
    const batch = await post([body]);
    expect(batch.status).toBe(400);
    for (const res of [accept, type, parse, batch]) expect(res.headers['content-type']).toBe('application/json');
  });

  it('refuses a browser Origin it does not know with 403 (DNS-rebinding protection), accepts its own', async () => {
    const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 'c', version: '1' } } };
    const foreign = await post(init, { Origin: 'https://evil.example' });
    expect(foreign.status).toBe(403);
    expect(foreign.headers['content-type']).toBe('application/json');
    const own = await post(init, { Origin: server.baseUrl });
    expect(own.status).toBe(200);
    expect(own.headers['access-control-allow-origin']).toBe(server.baseUrl);
  });
});

// Closed with the rest unread, a connection is reset under a client still sending, which saw EPIPE instead
// of the answer (RFC 9112 §9.6). Only across processes: in one, the client's writes finish first.
describe('a body over 64 KiB, from a client still sending it', () => {
  it.each([5, 20])('%i MB: the client reads the 413 and its JSON-RPC error, not a reset', async (megabytes) => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', params: { padding: 'x'.repeat(megabytes * 1024 * 1024) } });
    const response = await fetch(endpoint, { method: 'POST', headers: HEADERS, body });
    expect([response.status, await response.json()]).toEqual([413, { jsonrpc: '2.0', error: { code: -32600, message: expect.stringContaining('Payload Too Large') }, id: null }]);
  });
});

describe('tools', () => {
  let ajv: Ajv;
  beforeAll(() => {
    ajv = new Ajv({ strict: false, allErrors: true });
    formats.default(ajv);
  });

  it('tools/list has get_business (no arguments) and search_reviews (the spec §4.4 parameters and bounds), read-only, with output schemas', async () => {
    const { call } = await session();
    const tools = (await call('tools/list')).result?.['tools'] as Array<Record<string, unknown>>;
    const byName = new Map(tools.map((tool) => [tool['name'], tool]));
    const business = byName.get('get_business');
    const search = byName.get('search_reviews');
    expect(business).toBeDefined();
    expect(search).toBeDefined();
    expect(business?.['inputSchema']).toMatchObject({ type: 'object' });
    expect(Object.keys((business?.['inputSchema'] as { properties?: object }).properties ?? {})).toEqual([]);
    const properties = (search?.['inputSchema'] as { type: string; properties: Record<string, Record<string, unknown>>; required?: string[] }).properties;
    expect(search?.['inputSchema']).toMatchObject({ type: 'object' });
    expect((search?.['inputSchema'] as { required?: string[] }).required ?? []).toEqual([]);
    expect(properties['rating']).toMatchObject({ type: 'integer', minimum: 1, maximum: 5 });
    expect(properties['min_rating']).toMatchObject({ type: 'number', minimum: 1, maximum: 5 });
    expect(properties['limit']).toMatchObject({ type: 'integer', minimum: 1, maximum: 100 });
    for (const date of ['since', 'until']) expect(properties[date]).toMatchObject({ type: 'string', format: 'date' });
    for (const text of ['query', 'mentions_technician', 'mentions_service']) expect(properties[text]).toMatchObject({ type: 'string' });
    for (const tool of tools) {
      expect(tool['annotations']).toMatchObject({ readOnlyHint: true });
      expect(tool['outputSchema']).toMatchObject({ type: 'object' });
      expect(tool['name']).toMatch(/^[A-Za-z0-9_.-]{1,64}$/);
      expect(() => ajv.compile(tool['inputSchema'] as object)).not.toThrow();
    }
  });

  // JSON Schema asks for a portable subset of ECMA-262 regular expressions; the Python MCP SDK compiles
  // every outputSchema pattern with `re` before it validates a result, and refuses property escapes.
  it('every pattern in the tools\' input and output schemas is portable: no property escapes, and each compiles without Unicode mode', async () => {
    const { call } = await session();
    const tools = (await call('tools/list')).result?.['tools'] as Array<Record<string, unknown>>;
    const patterns: string[] = [];
    const collect = (node: unknown): void => {
      if (Array.isArray(node)) node.forEach(collect);
      else if (node !== null && typeof node === 'object')
        for (const [key, value] of Object.entries(node)) {
          if (key === 'pattern' && typeof value === 'string') patterns.push(value);
          else collect(value);
        }
    };
    for (const tool of tools) collect([tool['inputSchema'], tool['outputSchema']]);
    expect(patterns.length).toBeGreaterThan(0);
    for (const pattern of new Set(patterns)) {
      expect({ pattern, propertyEscape: /\\[pP]\{/.test(pattern) }).toEqual({ pattern, propertyEscape: false });
      expect(() => new RegExp(pattern)).not.toThrow();
    }
  });

  it('tools/call search_reviews {rating: 5, limit: 3} returns at most 3 reviews, all rated 5, as structuredContent matching the outputSchema and as the same JSON text', async () => {
    const { call } = await session();
    const tools = (await call('tools/list')).result?.['tools'] as Array<Record<string, unknown>>;
    const outputSchema = tools.find((tool) => tool['name'] === 'search_reviews')?.['outputSchema'] as object;
    const result = (await call('tools/call', { name: 'search_reviews', arguments: { rating: 5, limit: 3 } })).result as CallToolResult;
    expect(result.isError).toBeFalsy();
    const structured = result.structuredContent as { reviews: Array<{ rating: number }> };
    expect(structured.reviews.length).toBeGreaterThan(0);
    expect(structured.reviews.length).toBeLessThanOrEqual(3);
    expect(structured.reviews.every((review) => review.rating === 5)).toBe(true);
    const validate = ajv.compile(outputSchema);
    if (!validate(structured)) throw new Error(ajv.errorsText(validate.errors));
    const [block] = result.content;
    expect(block?.type).toBe('text');
    expect(JSON.parse((block as { text: string }).text)).toEqual(structured);
  });

  it('search_reviews answers like GET /api/reviews/search with the same parameters', async () => {
    const { call } = await session();
    const args = { min_rating: 4, since: '2026-01-01', query: 'price', limit: 7 };
    const result = (await call('tools/call', { name: 'search_reviews', arguments: args })).result as CallToolResult;
    const rest = await send('GET', `${server.baseUrl}/api/reviews/search?min_rating=4&since=2026-01-01&query=price&limit=7`);
    expect(result.structuredContent).toEqual(rest.json());
  });

  it('tools/call get_business {} returns the business of GET /reviews.json', async () => {
    const { call } = await session();
    const result = (await call('tools/call', { name: 'get_business', arguments: {} })).result as CallToolResult;
    expect(result.isError).toBeFalsy();
    const reviews = (await send('GET', `${server.baseUrl}/reviews.json`)).json() as { business: { name: string } };
    expect(JSON.stringify(result.structuredContent)).toContain(JSON.stringify(reviews.business.name));
  });

  it('invalid arguments (rating 9, limit 0, a 2025-02-30 date, an unknown key) are refused with a message naming the argument', async () => {
    const { call } = await session();
    for (const [args, field] of [
      [{ rating: 9 }, 'rating'],
      [{ limit: 0 }, 'limit'],
      [{ since: '2025-02-30' }, 'since'],
      [{ colour: 'red' }, 'colour'],
    ] as const) {
      const body = await call('tools/call', { name: 'search_reviews', arguments: args });
      // MCP allows either form: a JSON-RPC -32602 or a tool result with isError (what the model can read and correct).
      const message = body.error ? (expect(body.error.code).toBe(-32602), body.error.message) : (expect(body.result?.['isError']).toBe(true), JSON.stringify(body.result?.['content']));
      expect([field, message]).toEqual([field, expect.stringContaining(field)]);
    }
  });

  it('tools/call params that do not fit the method (no name, arguments not an object) are JSON-RPC -32602 Invalid params', async () => {
    const { call } = await session();
    for (const params of [{ arguments: {} }, { name: 'search_reviews', arguments: [5] }]) {
      expect((await call('tools/call', params)).error?.code).toBe(-32602);
    }
  });

  it('an unknown tool is a JSON-RPC -32602 protocol error (MCP 2025-06-18 server/tools "Error Handling")', async () => {
    const { call } = await session();
    const body = await call('tools/call', { name: 'no_such_tool', arguments: {} });
    expect(body.result).toBeUndefined();
    expect(body.error?.code).toBe(-32602);
    expect(body.error?.message).toContain('no_such_tool');
  });
});

describe('the SDK client (the way MCP hosts connect)', () => {
  it('connects, negotiates a version, lists and calls tools over one session', async () => {
    const client = new Client({ name: 'conformance-sdk', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(endpoint));
    await client.connect(transport);
    try {
      expect(transport.sessionId).toMatch(/^[\x21-\x7e]+$/);
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(['get_business', 'search_reviews']));
      const result = (await client.callTool({ name: 'search_reviews', arguments: { rating: 5, limit: 3 } })) as CallToolResult;
      expect((result.structuredContent as { reviews: unknown[] }).reviews.length).toBeLessThanOrEqual(3);
      await expect(client.ping()).resolves.toEqual({});
    } finally {
      await client.close();
    }
  });
});
