import { createHash, createHmac } from 'node:crypto';
import { once } from 'node:events';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { brotliCompressSync, deflateSync, gzipSync, zstdCompressSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ClientRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { MAX_MCP_BODY_BYTES } from '@reviews/domain';
import { SERVED_METHODS } from '@reviews/mcp-gateway/http-rules';
import { initializeBody, MCP_HEADERS, post, PROTOCOL_VERSION, rawSession, SECRET, startGateway, type RunningGateway } from './helpers.js';

const toolsList = { jsonrpc: '2.0', id: 2, method: 'tools/list' };

/** POSTs to `url` over a bare socket with exactly these header lines, no Content-Length or Transfer-Encoding added. */
async function postWithoutBody(url: string, headers: Record<string, string>): Promise<{ status: number; json: unknown }> {
  const { hostname, port, pathname } = new URL(url);
  const socket = connect(Number(port), hostname);
  const lines = [`POST ${pathname} HTTP/1.1`, `Host: ${hostname}:${port}`, 'Connection: close', ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`)];
  socket.end(`${lines.join('\r\n')}\r\n\r\n`);
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  await once(socket, 'close');
  const [head = '', body = ''] = Buffer.concat(chunks).toString('utf8').split('\r\n\r\n');
  return { status: Number(head.split(' ')[1]), json: JSON.parse(body) };
}

/** POSTs `body` over a bare socket in HTTP/`version` with this Host line, or none; the connection closes after the answer. */
async function postWithHost(url: string, version: '1.0' | '1.1', host: string | null, headers: Record<string, string>, body: unknown): Promise<{ status: number; json: unknown }> {
  const { hostname, port, pathname } = new URL(url);
  const socket = connect(Number(port), hostname);
  const text = JSON.stringify(body);
  const lines = [`POST ${pathname} HTTP/${version}`, ...(host === null ? [] : [`Host: ${host}`]), 'Connection: close', `Content-Length: ${Buffer.byteLength(text)}`];
  socket.end(`${[...lines, ...Object.entries({ ...MCP_HEADERS, ...headers }).map(([name, value]) => `${name}: ${value}`)].join('\r\n')}\r\n\r\n${text}`);
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  await once(socket, 'close');
  const answer = Buffer.concat(chunks).toString('utf8');
  const separator = answer.indexOf('\r\n\r\n');
  const bodyText = answer.slice(separator + 4);
  return { status: Number(answer.split(' ')[1]), json: bodyText === '' ? null : JSON.parse(bodyText) };
}

interface RawAnswer {
  readonly status: number;
  /** Header lines, lower case. */
  readonly headers: string[];
  readonly json: unknown;
}

/**
 * Connects to `url` over a bare socket and lets `send` write (told whether the server has begun to answer).
 * Resolves with what the server sent once it closed the connection, or null when it has not within
 * `patienceMs` of `send` returning.
 */
async function sentUntilClosed(url: string, send: (socket: Socket, answering: () => boolean) => Promise<void>, patienceMs: number): Promise<Buffer | null> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  // Writing after the server closed fails (EPIPE, ECONNRESET); what it sent has been read.
  socket.on('error', () => undefined);
  const closed = new Promise<true>((resolve) => socket.once('close', () => resolve(true)));
  const timeout = new AbortController();
  try {
    await send(socket, () => chunks.length > 0);
    const gaveUp = delay(patienceMs, false, { signal: timeout.signal }).catch(() => false);
    return (await Promise.race([closed, gaveUp])) ? Buffer.concat(chunks) : null;
  } finally {
    timeout.abort();
    socket.destroy();
  }
}

/** POSTs to `url` with these header lines, then what `send` writes; the answer as sentUntilClosed has it, parsed. */
async function postUntilClosed(
  url: string,
  headers: Record<string, string>,
  send: (socket: Socket, answering: () => boolean) => Promise<void>,
  patienceMs = 3000,
): Promise<RawAnswer | null> {
  const { hostname, port, pathname } = new URL(url);
  const lines = [`POST ${pathname} HTTP/1.1`, `Host: ${hostname}:${port}`, ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`)];
  const written = await sentUntilClosed(
    url,
    async (socket, answering) => {
      socket.write(`${lines.join('\r\n')}\r\n\r\n`);
      await send(socket, answering);
    },
    patienceMs,
  );
  if (written === null) return null;
  const [head = '', body = ''] = written.toString('utf8').split('\r\n\r\n');
  const [statusLine = '', ...headerLines] = head.split('\r\n');
  return { status: Number(statusLine.split(' ')[1]), headers: headerLines.map((line) => line.toLowerCase()), json: JSON.parse(body) };
}

/** Writes `raw` over a bare socket; what the server sent once it closed the connection, or null when it has not within 5 s. */
async function writtenUntilClosed(url: string, raw: string): Promise<string | null> {
  const written = await sentUntilClosed(url, async (socket) => void socket.write(raw), 5000);
  return written === null ? null : written.toString('utf8');
}

describe('POST /mcp HTTP rules', () => {
  let gateway: RunningGateway;
  let sessionId: string;
  /** A session that negotiated each of these versions, for the rules that depend on it (batches). */
  const negotiated = new Map<string, string>();
  const session = () => ({ 'Mcp-Session-Id': sessionId, 'MCP-Protocol-Version': PROTOCOL_VERSION });

  beforeAll(async () => {
    // Well over a minute's allowance of requests from one address: the limit has its own suite (rate-limit.test.ts).
    gateway = await startGateway({ env: { MCP_RATE_LIMIT_PER_MINUTE: '0' } });
    sessionId = await rawSession(gateway.url);
    for (const version of ['2024-11-05', '2025-03-26', '2025-11-25']) negotiated.set(version, await rawSession(gateway.url, version));
    negotiated.set(PROTOCOL_VERSION, sessionId);
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

  // MCP tasks (2025-11-25): a server that declares no tasks capability processes a task-augmented request normally.
  it('answers a task-augmented tools/call as the plain call, ignoring the task', async () => {
    const call = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'get_faq', arguments: {} } };
    const [plain, augmented] = await Promise.all([post(gateway.url, call, session()), post(gateway.url, { ...call, params: { ...call.params, task: { ttl: 60_000 } } }, session())]);
    expect(augmented.status).toBe(200);
    expect(augmented.json).toEqual(plain.json);
    expect(augmented.json).toMatchObject({ result: { content: expect.any(Array) } });
  });

  it('answers 400, not 404, when the session id comes on two field lines', async () => {
    const response = await new Promise<{ status: number; json: unknown }>((resolve, reject) => {
      const body = JSON.stringify(toolsList);
      const target = new URL(gateway.url);
      // Raw header pairs: fetch would join the two values into one field line.
      const headers = ['Host', target.host, 'Content-Type', 'application/json', 'Accept', 'application/json, text/event-stream', 'MCP-Protocol-Version', PROTOCOL_VERSION, 'Mcp-Session-Id', sessionId, 'Mcp-Session-Id', sessionId];
      const req = request({ host: target.hostname, port: target.port, path: target.pathname, method: 'POST', headers }, (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(text) as unknown }));
      });
      req.once('error', reject);
      req.end(body);
    });
    expect(response).toEqual({ status: 400, json: { jsonrpc: '2.0', id: 2, error: { code: -32000, message: 'Bad Request: Mcp-Session-Id appears more than once; send the session id once' } } });
  });

  it('answers 202 with no body to a notification', async () => {
    const response = await post(gateway.url, { jsonrpc: '2.0', method: 'notifications/initialized' }, session());
    expect(response.status).toBe(202);
    expect(response.text).toBe('');
  });

  // MCP 2025-06-18 basic/transports: an unsupported version is a 400 whatever the body, so the gateway's own
  // parameter checks must not answer first.
  it.each([
    ['tools/list', toolsList],
    ['ping', { jsonrpc: '2.0', id: 2, method: 'ping' }],
    ['a valid tools/call', { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'get_faq', arguments: {} } }],
    ['tools/call of an unknown tool', { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'delete_reviews', arguments: {} } }],
    ['tools/call without a name', { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { arguments: {} } }],
    ['tools/list with a cursor', { ...toolsList, params: { cursor: 'zzz' } }],
  ])('answers %s with an unsupported MCP-Protocol-Version with 400', async (_label, body) => {
    const response = await post(gateway.url, body, { ...session(), 'MCP-Protocol-Version': '1999-01-01' });
    expect(response.status).toBe(400);
    expect(response.json).toMatchObject({ jsonrpc: '2.0', error: { code: -32000, message: expect.stringContaining('Unsupported protocol version: 1999-01-01') } });
  });

  it('answers 400 to a notification or a batch with an unsupported MCP-Protocol-Version', async () => {
    for (const body of [{ jsonrpc: '2.0', method: 'notifications/initialized' }, [toolsList]]) {
      const response = await post(gateway.url, body, { ...session(), 'MCP-Protocol-Version': '1999-01-01' });
      expect(response.status).toBe(400);
      expect(response.json).toMatchObject({ error: { message: expect.stringContaining('Unsupported protocol version') } });
    }
  });

  // MCP's schema.json sets no additionalProperties: false on its messages; the SDK's strict schemas refused a
  // request with an extra member as an id-less -32600 that its client could not match to the request.
  it('answers a message with members JSON-RPC does not define as the message without them, alone or in a batch', async () => {
    const extra = '{"jsonrpc":"2.0","id":2,"method":"tools/list","x-trace":"abc","__proto__":{"id":3}}';
    const alone = await post(gateway.url, extra, session());
    expect(alone.status).toBe(200);
    expect(alone.json).toEqual((await post(gateway.url, toolsList, session())).json);
    const batched = await post(gateway.url, `[${extra}]`, { 'Mcp-Session-Id': negotiated.get('2025-03-26')!, 'MCP-Protocol-Version': '2025-03-26' });
    expect(batched.json).toEqual([alone.json]);
    const notification = await post(gateway.url, { jsonrpc: '2.0', method: 'notifications/initialized', 'x-trace': 'abc' }, session());
    expect(notification.status).toBe(202);
  });

  // JSON-RPC 2.0 §5.1: -32601 is "The method does not exist / is not available". A method of a capability
  // the server does not declare got -32602 when its params were malformed, -32601 when they were not.
  it('answers every method it does not serve with -32601, whatever the params, and serves the others', async () => {
    const methods = ClientRequestSchema.options.map((schema) => schema.shape.method.value).filter((method) => method !== 'initialize');
    for (const method of methods) {
      const response = await post(gateway.url, { jsonrpc: '2.0', id: 3, method, params: {} }, session());
      const code = (response.json as { error?: { code: number } }).error?.code;
      expect({ method, notFound: code === -32601 }).toEqual({ method, notFound: !SERVED_METHODS.has(method) });
    }
    expect(methods.filter((method) => SERVED_METHODS.has(method))).toHaveLength(SERVED_METHODS.size - 1);
  });

  // MCP 2025-06-18 basic/lifecycle: both parties MUST respect the negotiated version; basic/transports: without
  // the header, the server assumes 2025-03-26 only when it has no other way, such as the negotiated version.
  describe('the version the session negotiated', () => {
    it('stands for a missing MCP-Protocol-Version: a 2025-06-18 session gets no batches without the header', async () => {
      const response = await post(gateway.url, [toolsList], { 'Mcp-Session-Id': sessionId });
      expect(response.status).toBe(400);
      expect(response.json).toMatchObject({ error: { code: -32600, message: expect.stringContaining('batches are not supported in MCP 2025-06-18') } });
      expect((await post(gateway.url, toolsList, { 'Mcp-Session-Id': sessionId })).status).toBe(200);
    });

    it('refuses another supported version in the header with 400, alone or in a batch', async () => {
      for (const body of [toolsList, [toolsList], { jsonrpc: '2.0', method: 'notifications/initialized' }]) {
        const response = await post(gateway.url, body, { 'Mcp-Session-Id': sessionId, 'MCP-Protocol-Version': '2025-03-26' });
        expect(response.status).toBe(400);
        expect(response.json).toMatchObject({ error: { code: -32000, message: 'Bad Request: MCP-Protocol-Version 2025-03-26 is not the version this session negotiated (2025-06-18); send 2025-06-18, or initialize a new session' } });
      }
    });

    it('is the version the initialize answer names, also when the client asked for one the server does not speak', async () => {
      for (const asked of ['1999-01-01', '2024-11-05', '2025-11-25']) {
        const initialize = await post(gateway.url, initializeBody(1, asked));
        const answered = (initialize.json as { result: { protocolVersion: string } }).result.protocolVersion;
        const id = initialize.headers.get('mcp-session-id')!;
        expect((await post(gateway.url, toolsList, { 'Mcp-Session-Id': id, 'MCP-Protocol-Version': answered })).status).toBe(200);
        const other = answered === PROTOCOL_VERSION ? '2025-03-26' : PROTOCOL_VERSION;
        expect((await post(gateway.url, toolsList, { 'Mcp-Session-Id': id, 'MCP-Protocol-Version': other })).status).toBe(400);
      }
    });

    // Ids minted before they recorded the version stay valid through a rolling upgrade: any supported header goes.
    it('is unknown for an id minted before ids recorded it: any supported version, 2025-03-26 without the header', async () => {
      const kid = createHash('sha256').update(`mcp-session-kid:${SECRET}`).digest('base64url').slice(0, 8);
      const signed = `v1.${kid}.${Buffer.from(JSON.stringify({ sid: 'ab'.repeat(16), iat: 1_760_000_000 })).toString('base64url')}`;
      const legacy = `${signed}.${createHmac('sha256', SECRET).update(signed).digest('base64url')}`;
      for (const version of ['2025-03-26', PROTOCOL_VERSION]) expect((await post(gateway.url, toolsList, { 'Mcp-Session-Id': legacy, 'MCP-Protocol-Version': version })).status).toBe(200);
      expect((await post(gateway.url, [toolsList], { 'Mcp-Session-Id': legacy })).status).toBe(200);
    });
  });

  // MCP basic/lifecycle: initialize MUST be a request; input the server cannot accept gets an HTTP error.
  it('answers initialize sent as a notification (no id) with 400 -32600 and starts no session', async () => {
    const initialized = async () => (await gateway.metrics.registry.getSingleMetric('mcp_sessions_initialized_total')?.get())?.values[0]?.value ?? 0;
    const before = await initialized();
    const { id: _id, ...notification } = initializeBody();
    const response = await post(gateway.url, notification);
    expect(response.status).toBe(400);
    expect(response.json).toEqual({ jsonrpc: '2.0', error: { code: -32600, message: expect.stringContaining('initialize must be a request') }, id: null });
    expect(response.headers.get('mcp-session-id')).toBeNull();
    expect(await initialized()).toBe(before);
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

  describe('bodies it cannot read', () => {
    const json = JSON.stringify(toolsList);

    // Each message names the status it comes with and what to send instead, never a body-parser error code.
    it.each([
      ['a charset other than UTF-8', json, { 'Content-Type': 'application/json; charset=latin1' }, 415, -32000, 'Unsupported Media Type: charset latin1 is not supported; send UTF-8 JSON'],
      ['an unknown UTF- charset', json, { 'Content-Type': 'application/json; charset=utf-99' }, 415, -32000, 'Unsupported Media Type: charset utf-99 is not supported; send UTF-8 JSON'],
      // RFC 8259 §8.1: JSON exchanged between systems is UTF-8, whatever other UTF a decoder knows.
      ['UTF-16LE', Buffer.from(json, 'utf16le'), { 'Content-Type': 'application/json; charset=utf-16le' }, 415, -32000, 'Unsupported Media Type: charset utf-16le is not supported; send UTF-8 JSON'],
      ['UTF-7', json, { 'Content-Type': 'application/json; charset=UTF-7' }, 415, -32000, 'Unsupported Media Type: charset utf-7 is not supported; send UTF-8 JSON'],
      ['an unknown Content-Encoding', json, { 'Content-Encoding': 'bogus' }, 415, -32000, 'Unsupported Media Type: Content-Encoding bogus is not supported (gzip, deflate, br, zstd or identity)'],
      ['a body marked gzip that is not gzip', json, { 'Content-Encoding': 'gzip' }, 400, -32000, 'Bad Request: the body is not valid gzip'],
      ['a truncated gzip body', gzipSync(json).subarray(0, 12), { 'Content-Encoding': 'gzip' }, 400, -32000, 'Bad Request: the body is not valid gzip'],
      ['a body marked br that is not br', json, { 'Content-Encoding': 'br' }, 400, -32000, 'Bad Request: the body is not valid br'],
    ])('answers %s with a JSON-RPC error naming it', async (_label, body, headers, status, code, message) => {
      const response = await post(gateway.url, body, { ...session(), ...headers });
      expect(response.status).toBe(status);
      expect(response.headers.get('content-type')).toBe('application/json');
      expect(response.json).toEqual({ jsonrpc: '2.0', error: { code, message }, id: null });
    });

    it('names the content codings it reads in the 415 for one it does not (RFC 9110 §15.5.16)', async () => {
      const response = await post(gateway.url, json, { ...session(), 'Content-Encoding': 'compress' });
      expect([response.status, response.headers.get('accept-encoding')]).toEqual([415, 'gzip, deflate, br, zstd, identity']);
    });

    it('answers a body that is not valid UTF-8 with 400 -32700, and serves valid UTF-8 with the charset named in any case', async () => {
      const faqQuery = (query: Buffer) =>
        Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_faq","arguments":{"query":"'), query, Buffer.from('"}}}')]);
      const notUtf8 = { jsonrpc: '2.0', error: { code: -32700, message: 'Parse error: the body is not valid UTF-8, which JSON text must be (RFC 8259 §8.1)' }, id: null };
      for (const contentType of ['application/json', 'application/json; charset=utf-8', 'application/json; Charset=UTF-8']) {
        const served = await post(gateway.url, faqQuery(Buffer.from('café ☕')), { ...session(), 'Content-Type': contentType });
        expect(served.status).toBe(200);
        expect(served.json).toMatchObject({ id: 3, result: { structuredContent: { faq: expect.any(Array) } } });
        // A lone 0xff, a truncated sequence, an overlong "/", a UTF-16 surrogate: each would have become U+FFFD.
        for (const bytes of [[0xff], [0x63, 0xc3], [0xc0, 0xaf], [0xed, 0xa0, 0x80]]) {
          const refused = await post(gateway.url, faqQuery(Buffer.from(bytes)), { ...session(), 'Content-Type': contentType });
          expect([refused.status, refused.json]).toEqual([400, notUtf8]);
        }
      }
    });

    it.each([
      ['gzip', gzipSync],
      ['deflate', deflateSync],
      ['br', brotliCompressSync],
      ['zstd', zstdCompressSync],
    ])('reads a body in %s, a coding the 415 lists', async (coding, compress) => {
      const response = await post(gateway.url, compress(json), { ...session(), 'Content-Encoding': coding });
      expect(response.status).toBe(200);
      expect(response.json).toMatchObject({ id: 2, result: { tools: expect.any(Array) } });
    });
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

  describe('JSON-RPC batches', () => {
    // MCP 2025-03-26 basic/transports: a server MUST accept batches; 2025-06-18 removed them. A request without
    // MCP-Protocol-Version speaks the version its session negotiated (null: a 2025-03-26 session, header left out).
    const speaking = (version: string | null) =>
      version === null ? { 'Mcp-Session-Id': negotiated.get('2025-03-26')! } : { 'Mcp-Session-Id': negotiated.get(version)!, 'MCP-Protocol-Version': version };
    const getBusiness = { jsonrpc: '2.0', id: 'b', method: 'tools/call', params: { name: 'get_business', arguments: {} } };
    const initialized = { jsonrpc: '2.0', method: 'notifications/initialized' };

    it.each([
      ['without MCP-Protocol-Version (2025-03-26)', null],
      ['under 2025-03-26', '2025-03-26'],
      ['under 2024-11-05', '2024-11-05'],
    ])('answers a batch %s with an array of the responses to its requests, in their order', async (_label, version) => {
      const response = await post(gateway.url, [toolsList, initialized, getBusiness, { jsonrpc: '2.0', id: 4, method: 'ping' }], speaking(version));
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('application/json');
      expect(response.headers.get('mcp-session-id')).toBe(speaking(version)['Mcp-Session-Id']);
      expect(response.json).toEqual([
        { jsonrpc: '2.0', id: 2, result: { tools: expect.any(Array) } },
        { jsonrpc: '2.0', id: 'b', result: expect.objectContaining({ structuredContent: expect.objectContaining({ business: expect.any(Object) }) }) },
        { jsonrpc: '2.0', id: 4, result: {} },
      ]);
    });

    it.each([
      ['ping', { jsonrpc: '2.0', id: 5, method: 'ping' }],
      ['a valid tools/call', { jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'get_faq', arguments: {} } }],
      ['tools/call with invalid arguments', { jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'search_reviews', arguments: { limit: 0 } } }],
      ['tools/call of an unknown tool', { jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'delete_reviews', arguments: {} } }],
      ['tools/call without a name', { jsonrpc: '2.0', id: 5, method: 'tools/call', params: { arguments: {} } }],
      ['tools/list with a cursor', { ...toolsList, id: 5, params: { cursor: 'zzz' } }],
      ['resources/read of an unknown URI', { jsonrpc: '2.0', id: 5, method: 'resources/read', params: { uri: 'https://reviews.example.com/secrets.json' } }],
      ['an unknown method', { jsonrpc: '2.0', id: 5, method: 'reviews/delete' }],
    ])('answers %s in a batch of one with an array holding the answer it gets alone', async (_label, body) => {
      const alone = await post(gateway.url, body, speaking('2025-03-26'));
      expect(alone.status).toBe(200);
      const batched = await post(gateway.url, [body], speaking('2025-03-26'));
      expect(batched.status).toBe(200);
      expect(batched.json).toEqual([alone.json]);
    });

    it('answers a batch of notifications or of responses only with 202 and no body', async () => {
      for (const body of [[initialized, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } }], [{ jsonrpc: '2.0', id: 1, result: {} }]]) {
        const response = await post(gateway.url, body, speaking(null));
        expect(response.status).toBe(202);
        expect(response.text).toBe('');
      }
    });

    it('answers a request even when the same batch then cancels it', async () => {
      const response = await post(gateway.url, [getBusiness, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'b' } }], speaking(null));
      expect(response.status).toBe(200);
      expect(response.json).toEqual([expect.objectContaining({ id: 'b', result: expect.any(Object) })]);
    });

    it('counts the tool calls of a batch like single calls', async () => {
      const count = async (tool: string, outcome: string) =>
        (await gateway.metrics.registry.getSingleMetric('mcp_tool_calls_total')?.get())?.values.find((v) => v.labels['tool'] === tool && v.labels['outcome'] === outcome)?.value ?? 0;
      const [ok, unknown, failed] = [await count('get_business', 'ok'), await count('unknown', 'error'), await count('get_aspect_sentiment', 'error')];
      const unknownAspect = { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'get_aspect_sentiment', arguments: { aspect: 'parking' } } };
      await post(gateway.url, [getBusiness, { jsonrpc: '2.0', id: 6, method: 'tools/call', params: { name: 'delete_reviews' } }, unknownAspect], speaking(null));
      expect(await count('get_business', 'ok')).toBe(ok + 1);
      expect(await count('unknown', 'error')).toBe(unknown + 1);
      // A result with isError is a failed call too, as the fast path counts it.
      expect(await count('get_aspect_sentiment', 'error')).toBe(failed + 1);
    });

    // JSON-RPC 2.0 §6: each element that is no valid message gets its own Invalid Request response, id null
    // unless the element is a request whose id can be read.
    const invalidElement = (index: number, id: string | number | null = null) => ({ jsonrpc: '2.0', error: { code: -32600, message: expect.stringMatching(new RegExp(`^Invalid Request: .*\\bindex ${index}\\b`)) }, id });

    it('answers an invalid element that is a request with a readable id with that id, saying which member is at fault', async () => {
      const response = await post(gateway.url, [{ jsonrpc: '2.0', id: 1, method: 'ping' }, { jsonrpc: '2.0', id: 'list', method: 'tools/list', params: [] }], speaking('2025-03-26'));
      expect(response.json).toEqual([{ jsonrpc: '2.0', id: 1, result: {} }, invalidElement(1, 'list')]);
      expect((response.json as { error?: { message: string } }[])[1]!.error!.message).toContain('"params" must be an object');
    });

    it('answers each element that is no JSON-RPC message with its own Invalid Request and still answers the others, in order', async () => {
      const getFaq = { jsonrpc: '2.0', id: 'faq', method: 'tools/call', params: { name: 'get_faq', arguments: {} } };
      const response = await post(gateway.url, [{ jsonrpc: '2.0', id: 1, method: 'ping' }, 5, {}, getFaq, { jsonrpc: '2.0', id: 9, method: 'reviews/delete' }], speaking('2025-03-26'));
      expect(response.status).toBe(200);
      expect(response.json).toEqual([
        { jsonrpc: '2.0', id: 1, result: {} },
        invalidElement(1),
        invalidElement(2),
        { jsonrpc: '2.0', id: 'faq', result: expect.objectContaining({ structuredContent: { faq: expect.any(Array) } }) },
        { jsonrpc: '2.0', id: 9, error: expect.objectContaining({ code: -32601 }) },
      ]);
    });

    it.each([
      ['only invalid elements (the JSON-RPC 2.0 example [1,2,3])', [1, 2, 3], [invalidElement(0), invalidElement(1), invalidElement(2)]],
      ['a nested array', [[toolsList]], [invalidElement(0)]],
      ['notifications and an invalid element', [initialized, 'ping'], [invalidElement(1)]],
    ])('answers a batch of %s with 200 and an array of the Invalid Request responses', async (_label, body, expected) => {
      const response = await post(gateway.url, body, speaking(null));
      expect(response.status).toBe(200);
      expect(response.json).toEqual(expected);
    });

    it.each([
      ['2025-06-18', 'of requests', [toolsList, { ...toolsList, id: 3 }]],
      ['2025-11-25', 'of requests', [toolsList, { ...toolsList, id: 3 }]],
      ['2025-06-18', 'holding a nested array', [[toolsList]]],
      ['2025-06-18', 'of invalid elements', [5, {}]],
      ['2025-06-18', 'that is empty', []],
    ])('refuses a batch under %s %s with 400 -32600, before looking at its elements', async (version, _label, body) => {
      const response = await post(gateway.url, body, speaking(version));
      expect(response.status).toBe(400);
      expect(response.json).toEqual({ jsonrpc: '2.0', error: { code: -32600, message: expect.stringContaining(`batches are not supported in MCP ${version}`) }, id: null });
    });

    // Rules of the batch as a whole, not of one element. An empty array is no batch at all: JSON-RPC 2.0 §6
    // answers it with one Invalid Request object, not an array.
    it.each([
      ['an empty batch', []],
      ['initialize alone in a batch (MCP 2025-03-26 basic/lifecycle)', [initializeBody()]],
      ['initialize with another message in a batch', [initializeBody(), initialized]],
      ['requests mixed with responses', [toolsList, { jsonrpc: '2.0', id: 1, result: {} }]],
      ['more than 100 messages', Array.from({ length: 101 }, (_, id) => ({ jsonrpc: '2.0', id, method: 'ping' }))],
    ])('refuses %s with 400 -32600', async (_label, body) => {
      const response = await post(gateway.url, body, speaking('2025-03-26'));
      expect(response.status).toBe(400);
      expect(response.json).toEqual({ jsonrpc: '2.0', error: { code: -32600, message: expect.stringContaining('Invalid Request') }, id: null });
    });

    it('applies the session rules to a batch: missing id 400, forged id 404', async () => {
      expect((await post(gateway.url, [toolsList])).status).toBe(400);
      expect((await post(gateway.url, [toolsList], { 'Mcp-Session-Id': `${sessionId.slice(0, -2)}AA` })).status).toBe(404);
    });
  });

  describe('deeply nested messages', () => {
    const tooDeep = (id: number | null = null) => ({ jsonrpc: '2.0', error: { code: -32600, message: 'Invalid Request: the message nests arrays and objects more than 64 levels deep; no MCP message needs that many' }, id });
    /** A response (client to server) whose objects nest exactly `levels` deep, the message itself included. */
    const responseNesting = (levels: number) => `{"jsonrpc":"2.0","id":1,"result":${'{"a":'.repeat(levels - 2)}{}${'}'.repeat(levels - 2)}}`;
    const deepToolCall = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search_reviews","arguments":{"query":${'['.repeat(5000)}${']'.repeat(5000)}}}}`;
    const deepError = `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x","data":${'['.repeat(5000)}${']'.repeat(5000)}}}`;
    const batchHeaders = () => ({ 'Mcp-Session-Id': negotiated.get('2025-03-26')! });

    it('takes a message nested 64 levels deep and refuses one nested 65, alone or in a batch', async () => {
      expect((await post(gateway.url, responseNesting(64), session())).status).toBe(202);
      expect((await post(gateway.url, `[${responseNesting(64)},${responseNesting(64)}]`, batchHeaders())).status).toBe(202);
      for (const [body, headers] of [[responseNesting(65), session()], [`[${responseNesting(64)},${responseNesting(65)}]`, batchHeaders()]] as const) {
        const response = await post(gateway.url, body, headers);
        expect([response.status, response.json]).toEqual([400, tooDeep()]);
      }
    });

    // Nested thousands of levels, these overflowed the SDK's stack: a 400 Parse error quoting the RangeError, or in a batch a 500.
    // A request's own id answers for it; a response's names the server's request, and a batch is refused whole.
    it.each([
      ['a response', responseNesting(5000), session, null],
      ['an error response', deepError, session, null],
      ['a tools/call of nested arguments', deepToolCall, session, 2],
      ['a batch holding a response', `[${responseNesting(5000)}]`, batchHeaders, null],
      ['a batch holding a tools/call of nested arguments', `[${deepToolCall}]`, batchHeaders, null],
    ])('refuses %s nested 5000 levels deep with 400 -32600 saying so', async (_label, body, headers, id) => {
      const response = await post(gateway.url, body, headers());
      expect([response.status, response.json]).toEqual([400, tooDeep(id)]);
    });
  });

  // The complexity audit: the SDK's validation grew faster than the number of keys; a ping carrying 6,000 took 56 ms.
  describe('messages holding many values', () => {
    const tooMany = (id: number | null) => ({ jsonrpc: '2.0', error: { code: -32600, message: 'Invalid Request: the message holds more than 1000 values in its arrays and objects; no MCP message needs that many' }, id });
    /** A ping whose params hold `keys` keys: 4 values of its own (jsonrpc, id, method, params) and those. */
    const ping = (id: number, keys: number) => ({ jsonrpc: '2.0', id, method: 'ping', params: Object.fromEntries(Array.from({ length: keys }, (_, n) => [`k${n}`, n])) });

    it('takes a message holding 1000 values and refuses one holding 1001, alone or in a batch', async () => {
      expect((await post(gateway.url, ping(1, 996), session())).json).toEqual({ jsonrpc: '2.0', id: 1, result: {} });
      const refused = await post(gateway.url, ping(2, 997), session());
      expect([refused.status, refused.json]).toEqual([400, tooMany(2)]);
      const batch = await post(gateway.url, [ping(3, 996), ping(4, 997)], { 'Mcp-Session-Id': negotiated.get('2025-03-26')! });
      expect([batch.status, batch.json]).toEqual([400, tooMany(null)]);
    });
  });

  it('answers resources/read of an unknown URI with -32002 and the plain message, which clients prefix themselves', async () => {
    const uri = 'https://reviews.example.com/secrets.json';
    const response = await post(gateway.url, { jsonrpc: '2.0', id: 8, method: 'resources/read', params: { uri } }, session());
    expect(response.status).toBe(200);
    expect(response.json).toMatchObject({ id: 8, error: { code: -32002, message: expect.stringMatching(/^Resource not found: https:\/\/reviews\.example\.com\/secrets\.json\. Known resources: /), data: { uri } } });
  });

  // JSON-RPC 2.0 §5.1: an empty body is no more JSON than a body of spaces, so it is a Parse error too, never
  // -32600 Invalid Request, in a session and before one (initialize).
  describe('an empty body', () => {
    const parseError = { jsonrpc: '2.0', error: { code: -32700, message: 'Parse error: the body is not valid JSON' }, id: null };

    it.each([
      ['Content-Length: 0', '', {}],
      ['once decoded from gzip', gzipSync(''), { 'Content-Encoding': 'gzip' }],
    ])('answers an empty body (%s) with 400 -32700, as a body of spaces', async (_label, body, headers) => {
      for (const sessionHeaders of [session(), {}, { 'Mcp-Session-Id': 'v1.stale.id.x' }]) {
        const spaces = await post(gateway.url, ' \t\r\n', sessionHeaders);
        const empty = await post(gateway.url, body, { ...sessionHeaders, ...headers });
        expect([empty.status, empty.json]).toEqual([400, parseError]);
        expect([spaces.status, spaces.json]).toEqual([400, parseError]);
      }
    });

    // RFC 9112 §6.3: a request with neither Content-Length nor Transfer-Encoding has an empty body, and its
    // Content-Type, needless without content, is no reason for a 415.
    it.each([
      ['in a session', () => ({ ...MCP_HEADERS, ...session() })],
      ['before a session (initialize)', () => MCP_HEADERS],
      ['without Content-Type', () => ({ Accept: MCP_HEADERS.Accept, ...session() })],
    ])('answers a POST without any body %s with 400 -32700', async (_label, headers) => {
      const response = await postWithoutBody(gateway.url, headers());
      expect(response.status).toBe(400);
      expect(response.json).toEqual(parseError);
    });
  });

  // The SDK's transport builds a URL from Host and answered an empty 400 without one (HTTP/1.0 needs none,
  // RFC 9112 §3.2) or with an IPv6 literal its URL parser writes otherwise (RFC 3986 §3.2.2 allows both).
  it.each([
    ['HTTP/1.0 without Host', '1.0', null],
    ['an IPv4-mapped IPv6 literal', '1.1', '[::ffff:127.0.0.1]'],
    ['an IPv6 literal written in full', '1.1', '[0:0:0:0:0:0:0:1]'],
  ] as const)('answers requests the SDK serves sent with %s', async (_label, version, hostname) => {
    const host = hostname === null ? null : `${hostname}:${new URL(gateway.url).port}`;
    const initialize = await postWithHost(gateway.url, version, host, {}, initializeBody(5));
    expect(initialize.status).toBe(200);
    expect(initialize.json).toMatchObject({ id: 5, result: { protocolVersion: PROTOCOL_VERSION } });
    const list = await postWithHost(gateway.url, version, host, session(), { jsonrpc: '2.0', id: 6, method: 'prompts/list' });
    expect(list.status).toBe(200);
    expect(list.json).toMatchObject({ id: 6, result: { prompts: expect.any(Array) } });
  });

  // JSON-RPC 2.0 §5.1: -32700 is for invalid JSON only; valid JSON that is no Request object is -32600.
  it.each(['{"hello":"world"}', '1', 'null', 'true', '"hi"'])('answers the valid JSON %s, which is no JSON-RPC message, with 400 -32600 and id null', async (body) => {
    const response = await post(gateway.url, body, session());
    expect(response.status).toBe(400);
    expect(response.json).toEqual({ jsonrpc: '2.0', error: { code: -32600, message: expect.any(String) }, id: null });
  });

  // JSON-RPC 2.0 §5 wants id null only when the id cannot be detected; MCP's schema gives every error a string or
  // integer id. A request whose id can be read gets it back, so its client can match the error to it.
  it.each([
    ['{"jsonrpc":"1.0","id":7,"method":"ping"}', 7, '"jsonrpc" must be "2.0"'],
    ['{"jsonrpc":"2.0","id":"x","method":"tools/list","params":[]}', 'x', '"params" must be an object'],
    ['{"jsonrpc":"2.0","id":8,"method":5}', 8, '"method" must be a string'],
    ['{"jsonrpc":"2.0","id":1.5,"method":"ping"}', null, '"id" must be a string or an integer'],
    ['{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}', null, '"id" must be a string or an integer'],
    ['{"jsonrpc":"2.0","id":3,"result":5}', null, '"result" must be an object'],
    ['{"jsonrpc":"2.0","id":3}', null, 'a message needs "method"'],
  ])('answers the invalid message %s with 400 -32600, id %p, naming what is wrong', async (body, id, reason) => {
    const response = await post(gateway.url, body, session());
    expect(response.status).toBe(400);
    expect(response.json).toEqual({ jsonrpc: '2.0', error: { code: -32600, message: expect.stringContaining(reason) }, id });
  });

  it(`answers 413 as JSON-RPC to a body over ${MAX_MCP_BODY_BYTES} bytes`, async () => {
    const body = { ...toolsList, params: { padding: 'x'.repeat(MAX_MCP_BODY_BYTES) } };
    const response = await post(gateway.url, body, session());
    expect(response.status).toBe(413);
    expect(response.json).toMatchObject({ jsonrpc: '2.0', error: { message: expect.stringContaining(String(MAX_MCP_BODY_BYTES)) } });
  });

  describe('a body over the limit', () => {
    const tooLarge = { jsonrpc: '2.0', error: { code: -32600, message: `Payload Too Large: request bodies are limited to ${MAX_MCP_BODY_BYTES} bytes` }, id: null };
    const headers = () => ({ ...MCP_HEADERS, ...session() });

    it('answers a declared Content-Length over the limit with 413 at once and closes the connection once the client stops sending', async () => {
      const answer = await postUntilClosed(gateway.url, { ...headers(), 'Content-Length': '10000000000' }, async (socket) => {
        socket.write('{"jsonrpc":"2.0","id":1,"method":"ping","params":{"padding":"');
      });
      expect(answer).toEqual({ status: 413, headers: expect.arrayContaining(['connection: close']), json: tooLarge });
    });

    it('stops reading a chunked body once it passes the limit: 413, and the connection closes while the client still sends', async () => {
      const chunk = Buffer.from(`1000\r\n${' '.repeat(0x1000)}\r\n`);
      const giveUpAfter = 64 * MAX_MCP_BODY_BYTES;
      let sent = 0;
      const answer = await postUntilClosed(gateway.url, { ...headers(), 'Transfer-Encoding': 'chunked' }, async (socket, answering) => {
        // Never the last chunk: a server reading to the end of the body never answers.
        for (; sent < giveUpAfter && !answering() && !socket.destroyed; sent += 0x1000) {
          socket.write(chunk);
          await delay(1);
        }
      });
      expect(answer).toEqual({ status: 413, headers: expect.arrayContaining(['connection: close']), json: tooLarge });
      expect(sent).toBeLessThan(giveUpAfter);
    });

    it('reads at most 32 MiB more of a body that does not end, then closes', async () => {
      const { hostname, port, pathname } = new URL(gateway.url);
      // A client that sends on after the server's FIN (most close their side then, which ends the lingering).
      const socket = connect({ port: Number(port), host: hostname, allowHalfOpen: true });
      const received: Buffer[] = [];
      socket.on('data', (chunk: Buffer) => received.push(chunk));
      // Writing after the server closed fails (EPIPE, ECONNRESET): that is how the client learns it.
      socket.on('error', () => undefined);
      const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      const lines = [`POST ${pathname} HTTP/1.1`, `Host: ${hostname}:${port}`, ...Object.entries({ ...headers(), 'Content-Length': '1000000000000' }).map(([name, value]) => `${name}: ${value}`)];
      socket.write(`${lines.join('\r\n')}\r\n\r\n`);
      const megabyte = Buffer.alloc(1024 * 1024, 0x20);
      let sent = 0;
      // Bounded: a server reading on without end stops the test at 256 MiB.
      while (!socket.destroyed && socket.writable && sent < 256 * megabyte.length) {
        sent += megabyte.length;
        if (!socket.write(megabyte)) await Promise.race([new Promise((resolve) => socket.once('drain', resolve)), closed]);
      }
      expect(await Promise.race([closed.then(() => 'closed'), delay(15_000, 'still open')])).toBe('closed');
      expect(Buffer.concat(received).toString('latin1')).toMatch(/^HTTP\/1\.1 413 /);
      // What the server read, plus what the two sides' socket buffers held when it closed.
      expect(sent).toBeGreaterThan(32 * megabyte.length);
      expect(sent).toBeLessThan(96 * megabyte.length);
    }, 20_000);
  });

  it.each(['GET', 'DELETE', 'PUT'])('answers %s with 405, Allow: POST, OPTIONS and a JSON-RPC error', async (method) => {
    const response = await fetch(gateway.url, { method, headers: { Accept: 'text/event-stream', 'Mcp-Session-Id': sessionId } });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('POST, OPTIONS');
    // A shared cache kept a 405 (cacheable by default) and served it to every origin, without their CORS headers.
    expect([response.headers.get('cache-control'), response.headers.get('vary')]).toEqual(['no-store', 'Origin, Accept-Encoding']);
    expect(await response.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32000 } });
  });

  describe('Origin and CORS', () => {
    it('rejects a foreign Origin with 403 before anything else', async () => {
      const response = await post(gateway.url, initializeBody(), { Origin: 'https://evil.example' });
      expect(response.status).toBe(403);
      expect(response.json).toMatchObject({ error: { code: -32000, message: expect.stringContaining('Origin') } });
      expect(response.headers.get('mcp-session-id')).toBeNull();
      expect([response.headers.get('cache-control'), response.headers.get('vary')]).toEqual(['no-store', 'Origin, Accept-Encoding']);
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

    // An audit: a page compressing its body was refused by the preflight, though the gateway takes gzip, deflate, br and zstd.
    it('answers a preflight with the MCP request headers and Content-Encoding', async () => {
      const response = await fetch(gateway.url, { method: 'OPTIONS', headers: { Origin: 'http://localhost:6274', 'Access-Control-Request-Method': 'POST' } });
      expect(response.status).toBe(204);
      expect(response.headers.get('allow')).toBe('POST, OPTIONS');
      expect(response.headers.get('access-control-allow-methods')).toBe('POST, DELETE');
      for (const header of ['Content-Type', 'Content-Encoding', 'Accept', 'Mcp-Session-Id', 'MCP-Protocol-Version', 'Last-Event-ID']) {
        expect(response.headers.get('access-control-allow-headers')).toContain(header);
      }
    });

    // A browser audit: a page with OpenTelemetry's browser tracing sends traceparent, which the fixed list refused, failing every fetch.
    it('grants a preflight the headers it asks for, a page tracing its requests included', async () => {
      const requested = 'content-type, mcp-session-id, traceparent, x-request-id';
      const response = await fetch(gateway.url, { method: 'OPTIONS', headers: { Origin: 'http://localhost:6274', 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': requested } });
      expect(response.status).toBe(204);
      expect(response.headers.get('access-control-allow-headers')).toBe(requested);
    });

    // The SDK's terminateSession() takes a 405 as "not supported"; a preflight without DELETE would turn it into a network error.
    it('lets a browser end its session: DELETE passes the preflight and its 405 is readable by the origin', async () => {
      const origin = 'http://localhost:6274';
      const preflight = await fetch(gateway.url, { method: 'OPTIONS', headers: { Origin: origin, 'Access-Control-Request-Method': 'DELETE', 'Access-Control-Request-Headers': 'mcp-session-id, mcp-protocol-version' } });
      expect(preflight.status).toBe(204);
      expect(preflight.headers.get('access-control-allow-methods')?.split(/\s*,\s*/)).toContain('DELETE');
      const deletion = await fetch(gateway.url, { method: 'DELETE', headers: { Origin: origin, 'Mcp-Session-Id': 'any' } });
      expect(deletion.status).toBe(405);
      expect(deletion.headers.get('access-control-allow-origin')).toBe(origin);
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

  // The security audit: node:http's parser stopped after a request asking to upgrade, and one pipelined behind it
  // went unanswered, the connection left open. No other protocol is served; the request is answered as the last.
  it.each([
    ['GET', 'h2c', 405],
    ['GET', 'websocket', 405],
    ['POST', 'h2c', 200],
    ['POST', 'websocket', 200],
  ])('answers %s /mcp asking to upgrade to %s over HTTP/1.1, then closes without serving the request pipelined behind it', async (method, protocol, status) => {
    const { host, pathname } = new URL(gateway.url);
    const request = (requestMethod: string, fields: Record<string, string>, body: string) =>
      `${[`${requestMethod} ${pathname} HTTP/1.1`, `Host: ${host}`, ...Object.entries({ ...MCP_HEADERS, ...session(), ...fields }).map(([name, value]) => `${name}: ${value}`)].join('\r\n')}\r\n\r\n${body}`;
    const body = method === 'POST' ? JSON.stringify(toolsList) : '';
    const upgrade = request(method, { Upgrade: protocol, Connection: 'Upgrade', 'Content-Length': String(body.length) }, body);
    const behind = JSON.stringify({ ...toolsList, id: 3 });
    const written = await writtenUntilClosed(gateway.url, upgrade + request('POST', { 'Content-Length': String(behind.length) }, behind));
    expect(written).not.toBeNull();
    expect(written!.match(/^HTTP\/1\.1 \d{3}/gm)).toEqual([`HTTP/1.1 ${status}`]);
    const [head = '', answer = ''] = written!.split('\r\n\r\n');
    expect(head.toLowerCase().split('\r\n')).toContain('connection: close');
    if (method === 'POST') expect(JSON.parse(answer)).toMatchObject({ id: 2, result: { tools: expect.any(Array) } });
  });

  // RFC 9110 §9.3.7: OPTIONS describes the communication options, so it lists the methods, as a 405 does.
  it('answers OPTIONS without Origin with 204 and Allow: POST, OPTIONS', async () => {
    const response = await fetch(gateway.url, { method: 'OPTIONS' });
    expect(response.status).toBe(204);
    expect(response.headers.get('allow')).toBe('POST, OPTIONS');
  });

  // The MCP audit: express matched /MCP and /mcp/ as /mcp, serving a second endpoint (2025-06-18: "a single HTTP endpoint path").
  it.each(['/elsewhere', '/MCP', '/mcp/', '/Mcp'])('answers other paths with the JSON 404 envelope: %s', async (path) => {
    const response = await fetch(gateway.url.replace(/\/mcp$/, path), { method: 'POST', headers: MCP_HEADERS, body: JSON.stringify(initializeBody()) });
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ error: 'not_found' });
  });
});
