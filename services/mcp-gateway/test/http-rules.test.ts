import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { MAX_BODY_BYTES } from '@reviews/mcp-gateway';
import { initializeBody, MCP_HEADERS, post, PROTOCOL_VERSION, rawSession, startGateway, type RunningGateway } from './helpers.js';

const toolsList = { jsonrpc: '2.0', id: 2, method: 'tools/list' };

describe('POST /mcp HTTP rules', () => {
  let gateway: RunningGateway;
  let sessionId: string;
  const session = () => ({ 'Mcp-Session-Id': sessionId, 'MCP-Protocol-Version': PROTOCOL_VERSION });

  beforeAll(async () => {
    gateway = await startGateway();
    sessionId = await rawSession(gateway.url);
  });
  afterAll(() => gateway.close());

  it('initialize returns a visible-ASCII signed session id and negotiates 2025-06-18 as JSON', async () => {
    const response = await post(gateway.url, initializeBody());
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(response.headers.get('mcp-session-id')).toMatch(/^v1\.[A-Za-z0-9_-]{8}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
    expect(response.json).toMatchObject({ jsonrpc: '2.0', id: 1, result: { protocolVersion: PROTOCOL_VERSION, serverInfo: { name: 'reviews' } } });
  });

  it.each(['2025-11-25', '2025-03-26', '2024-11-05'])('accepts the other supported protocol version %s', async (version) => {
    const response = await post(gateway.url, initializeBody(1, version));
    expect(response.json).toMatchObject({ result: { protocolVersion: version } });
  });

  it('initialize is accepted even with a stale or forged session id', async () => {
    const response = await post(gateway.url, initializeBody(), { 'Mcp-Session-Id': 'v1.stale.id.x' });
    expect(response.status).toBe(200);
    expect(response.headers.get('mcp-session-id')).not.toBe('v1.stale.id.x');
  });

  it('serves a request carrying a valid session id', async () => {
    const response = await post(gateway.url, toolsList, session());
    expect(response.status).toBe(200);
    expect(response.headers.get('mcp-session-id')).toBe(sessionId);
    expect(response.json).toMatchObject({ id: 2, result: { tools: expect.any(Array) } });
  });

  it('answers 400 when the session id is missing', async () => {
    const response = await post(gateway.url, toolsList);
    expect(response.status).toBe(400);
    expect(response.json).toMatchObject({ jsonrpc: '2.0', id: 2, error: { code: -32000, message: expect.stringContaining('Mcp-Session-Id') } });
  });

  it.each([
    ['garbage', 'not-a-session'],
    ['a tampered signature', () => `${sessionId.slice(0, -2)}AA`],
    ['a tampered payload', () => sessionId.replace(/^(v1\.[^.]+\.)./, '$1A')],
    ['an id signed with another secret', 'v1.AAAAAAAA.eyJzaWQiOiIwIn0.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'],
  ])('answers 404 -32001 for %s', async (_label, id) => {
    const forged = typeof id === 'function' ? id() : id;
    if (forged === sessionId) throw new Error('tampering left the id unchanged');
    const response = await post(gateway.url, toolsList, { 'Mcp-Session-Id': forged, 'MCP-Protocol-Version': PROTOCOL_VERSION });
    expect(response.status).toBe(404);
    expect(response.json).toMatchObject({ error: { code: -32001 } });
  });

  it('answers 202 with no body to a notification', async () => {
    const response = await post(gateway.url, { jsonrpc: '2.0', method: 'notifications/initialized' }, session());
    expect(response.status).toBe(202);
    expect(response.text).toBe('');
  });

  it('answers 400 to an unsupported MCP-Protocol-Version', async () => {
    const response = await post(gateway.url, toolsList, { ...session(), 'MCP-Protocol-Version': '1999-01-01' });
    expect(response.status).toBe(400);
    expect(response.json).toMatchObject({ error: { message: expect.stringContaining('Unsupported protocol version') } });
  });

  it.each([
    ['only application/json', 'application/json'],
    ['only text/event-stream', 'text/event-stream'],
    ['a wildcard', '*/*'],
    ['application/json with q=0 (not acceptable, RFC 9110 §12.4.2)', 'application/json;q=0, text/event-stream'],
    ['text/event-stream with Q=0.000', 'application/json, text/event-stream; Q=0.000'],
  ])('answers 406 when Accept lists %s', async (_label, accept) => {
    const response = await post(gateway.url, toolsList, { ...session(), Accept: accept });
    expect(response.status).toBe(406);
    expect(response.json).toMatchObject({ jsonrpc: '2.0', error: { code: -32000, message: expect.stringContaining('Accept') } });
  });

  it.each([
    ['in mixed case (RFC 9110 §8.3.1: type and subtype are case-insensitive)', 'Application/JSON, Text/Event-Stream'],
    ['with parameters and non-zero weights', 'application/json; charset=utf-8; q=0.5, text/event-stream;q=1'],
  ])('serves initialize and later requests with both types listed %s', async (_label, accept) => {
    const initialize = await post(gateway.url, initializeBody(), { Accept: accept });
    expect(initialize.status).toBe(200);
    expect(initialize.headers.get('mcp-session-id')).toEqual(expect.any(String));
    const response = await post(gateway.url, toolsList, { ...session(), Accept: accept });
    expect(response.status).toBe(200);
    expect(response.json).toMatchObject({ id: 2, result: { tools: expect.any(Array) } });
  });

  it('answers 415 to a body that is not application/json', async () => {
    const response = await post(gateway.url, 'method=tools/list', { ...session(), 'Content-Type': 'application/x-www-form-urlencoded' });
    expect(response.status).toBe(415);
    expect(response.json).toMatchObject({ error: { code: -32000 } });
  });

  it('answers malformed JSON with 400 -32700 as JSON, never an HTML page', async () => {
    const response = await post(gateway.url, '{"jsonrpc": "2.0", "id": 1,', session());
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(response.json).toEqual({ jsonrpc: '2.0', error: { code: -32700, message: expect.any(String) }, id: null });
  });

  it('answers params that do not fit the method with -32602 Invalid params naming the field (JSON-RPC 2.0), not -32603', async () => {
    for (const params of [{ arguments: {} }, { name: 'search_reviews', arguments: 'rating=5' }]) {
      const response = await post(gateway.url, { jsonrpc: '2.0', id: 7, method: 'tools/call', params }, session());
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('application/json');
      expect(response.json).toMatchObject({ jsonrpc: '2.0', id: 7, error: { code: -32602, message: expect.stringMatching(/^Invalid params for tools\/call: params\.(name|arguments): /) } });
    }
    const initialize = await post(gateway.url, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { capabilities: {} } });
    expect(initialize.status).toBe(400);
    expect(initialize.json).toMatchObject({ id: 1, error: { code: -32602, message: expect.stringContaining('params.protocolVersion') } });
  });

  it('rejects JSON-RPC batches with 400 -32600', async () => {
    const response = await post(gateway.url, [toolsList, { ...toolsList, id: 3 }], session());
    expect(response.status).toBe(400);
    expect(response.json).toMatchObject({ error: { code: -32600, message: expect.stringContaining('batch') } });
  });

  // JSON-RPC 2.0 §5.1: -32700 is for invalid JSON only; valid JSON that is no Request object is -32600.
  it.each(['{"hello":"world"}', '1', 'null', 'true', '"hi"'])('answers the valid JSON %s, which is no JSON-RPC message, with 400 -32600 and id null', async (body) => {
    const response = await post(gateway.url, body, session());
    expect(response.status).toBe(400);
    expect(response.json).toEqual({ jsonrpc: '2.0', error: { code: -32600, message: expect.any(String) }, id: null });
  });

  it(`answers 413 as JSON-RPC to a body over ${MAX_BODY_BYTES} bytes`, async () => {
    const body = { ...toolsList, params: { padding: 'x'.repeat(MAX_BODY_BYTES) } };
    const response = await post(gateway.url, body, session());
    expect(response.status).toBe(413);
    expect(response.json).toMatchObject({ jsonrpc: '2.0', error: { message: expect.stringContaining(String(MAX_BODY_BYTES)) } });
  });

  it.each(['GET', 'DELETE', 'PUT'])('answers %s with 405, Allow: POST and a JSON-RPC error', async (method) => {
    const response = await fetch(gateway.url, { method, headers: { Accept: 'text/event-stream', 'Mcp-Session-Id': sessionId } });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('POST');
    expect(await response.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32000 } });
  });

  describe('Origin and CORS', () => {
    it('rejects a foreign Origin with 403 before anything else', async () => {
      const response = await post(gateway.url, initializeBody(), { Origin: 'https://evil.example' });
      expect(response.status).toBe(403);
      expect(response.json).toMatchObject({ error: { code: -32000, message: expect.stringContaining('Origin') } });
      expect(response.headers.get('mcp-session-id')).toBeNull();
    });

    it.each(['https://reviews.example.com', 'http://localhost:6274', 'http://127.0.0.1:3000'])('allows %s and exposes Mcp-Session-Id to it', async (origin) => {
      const response = await post(gateway.url, initializeBody(), { Origin: origin });
      expect(response.status).toBe(200);
      expect(response.headers.get('access-control-allow-origin')).toBe(origin);
      expect(response.headers.get('access-control-expose-headers')).toContain('Mcp-Session-Id');
    });

    it('exposes Mcp-Session-Id on error responses too', async () => {
      const response = await post(gateway.url, toolsList, { Origin: 'http://localhost:6274', 'Mcp-Session-Id': 'forged' });
      expect(response.status).toBe(404);
      expect(response.headers.get('access-control-expose-headers')).toContain('Mcp-Session-Id');
    });

    it('answers a preflight with the MCP request headers', async () => {
      const response = await fetch(gateway.url, { method: 'OPTIONS', headers: { Origin: 'http://localhost:6274', 'Access-Control-Request-Method': 'POST' } });
      expect(response.status).toBe(204);
      expect(response.headers.get('access-control-allow-methods')).toBe('POST');
      for (const header of ['Content-Type', 'Accept', 'Mcp-Session-Id', 'MCP-Protocol-Version', 'Last-Event-ID']) {
        expect(response.headers.get('access-control-allow-headers')).toContain(header);
      }
    });

    it('uses MCP_ALLOWED_ORIGINS instead of the default when set', async () => {
      const custom = await startGateway({ env: { MCP_ALLOWED_ORIGINS: 'https://app.example.org, https://other.example.org' } });
      try {
        expect((await post(custom.url, initializeBody(), { Origin: 'https://app.example.org' })).status).toBe(200);
        expect((await post(custom.url, initializeBody(), { Origin: 'http://localhost:6274' })).status).toBe(403);
      } finally {
        await custom.close();
      }
    });
  });

  it('answers other paths with the JSON 404 envelope', async () => {
    const response = await fetch(gateway.url.replace(/\/mcp$/, '/elsewhere'), { method: 'POST', headers: MCP_HEADERS, body: '{}' });
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ error: 'not_found' });
  });
});
