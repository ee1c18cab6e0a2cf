import { once } from 'node:events';
import { request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ASPECTS, type Snapshot } from '@reviews/domain';
import { createHttpServer, createLogger, createMetrics, loadConfig, type Metrics, type RequestHandler } from '@reviews/runtime';
import { createMcpGateway } from '@reviews/mcp-gateway';
import { MAX_MCP_BODY_BYTES } from '@reviews/domain';
import { createGatewayMetrics } from '@reviews/mcp-gateway/metrics';
import { createSessionIds } from '@reviews/mcp-gateway/session-id';
import { createOriginPolicy } from '@reviews/mcp-gateway/origins';
import { createMemoizedToolCalls } from '@reviews/mcp-gateway/memoized-tool-calls';
import { createToolCallFastPath } from '@reviews/mcp-gateway/tool-call-fast-path';
import { markUncacheable } from '@reviews/mcp-gateway/http-rules';
import { BASE_URL, fixtureSnapshot, PROTOCOL_VERSION, SECRET } from './helpers.js';

interface RawAnswer {
  readonly status: number;
  /** Every header in wire order and case, except Date. */
  readonly headers: string[];
  readonly body: string;
}

/** A raw POST /mcp, so header order and case and the exact body bytes can be compared. */
async function rawPost(url: string, body: string | Buffer, headers: Record<string, string>): Promise<RawAnswer> {
  const req = request(url, { method: 'POST', headers: { 'Content-Length': String(Buffer.byteLength(body)), ...headers }, agent: false });
  req.end(body);
  const [res] = (await once(req, 'response')) as [IncomingMessage];
  const chunks: Buffer[] = [];
  for await (const chunk of res) chunks.push(chunk as Buffer);
  const raw: string[] = [];
  for (let i = 0; i < res.rawHeaders.length; i += 2) if (res.rawHeaders[i] !== 'Date') raw.push(`${res.rawHeaders[i]}: ${res.rawHeaders[i + 1]}`);
  return { status: res.statusCode ?? 0, headers: raw, body: Buffer.concat(chunks).toString('utf8') };
}

async function serve(handler: RequestHandler): Promise<{ url: string; server: Server }> {
  const server = createHttpServer(handler);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, server };
}

const call = (id: number | string, name: string, args?: Record<string, unknown>) =>
  JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: args === undefined ? { name } : { name, arguments: args } });

/** Relevant lines of the Prometheus text, without timings. */
async function countersOf(metrics: Metrics): Promise<string[]> {
  const text = await metrics.registry.metrics();
  return text.split('\n').filter((line) => line.startsWith('mcp_tool_calls_total{') || (line.startsWith('http_request_duration_seconds_count{') && line.includes('mcp-gateway')));
}

describe('tools/call fast path', () => {
  const snapshot: Snapshot = fixtureSnapshot();
  const config = loadConfig({ BASE_URL, MCP_SESSION_SECRET: SECRET });
  const logger = createLogger('mcp-gateway', 'silent');
  const sessionId = createSessionIds(SECRET).mint(PROTOCOL_VERSION);
  /** A session that negotiated 2025-03-26, the last version with batches. */
  const batchSessionId = createSessionIds(SECRET).mint('2025-03-26');
  const fastMetrics = createMetrics();
  const sdkMetrics = createMetrics();
  let fast: { url: string; server: Server };
  let sdk: { url: string; server: Server };
  /** Only the fast path, falling back to the SDK-path gateway: shows which requests it takes. */
  let probe: { url: string; server: Server };
  let fallbacks = 0;

  const review = snapshot.reviewsDocument.reviews[0]!;
  const technician = snapshot.reviewsDocument.business.technicians[0]!;
  const service = snapshot.reviewsDocument.business.services[0]!;
  const headers = (extra: Record<string, string> = {}) => ({
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
    'Mcp-Session-Id': sessionId,
    'MCP-Protocol-Version': PROTOCOL_VERSION,
    ...extra,
  });

  beforeAll(async () => {
    const deps = { config, logger, snapshots: { current: () => snapshot } };
    fast = await serve(createMcpGateway({ ...deps, metrics: fastMetrics }));
    sdk = await serve(createMcpGateway({ ...deps, metrics: sdkMetrics, toolCallFastPath: false }));
    // Its own registry, so the two gateways above see the same requests once each.
    const sdkGateway = createMcpGateway({ ...deps, metrics: createMetrics(), toolCallFastPath: false });
    const fastPath = createToolCallFastPath({
      sessions: createSessionIds(SECRET),
      originAllowed: createOriginPolicy(config),
      snapshots: deps.snapshots,
      toolCalls: createMemoizedToolCalls(createGatewayMetrics(createMetrics())),
      logger,
    });
    const countingFallback: RequestHandler = (req, res) => {
      fallbacks += 1;
      sdkGateway(req, res);
    };
    // As the gateway composes it: its headers for every answer, then the fast path.
    probe = await serve((req, res) => {
      markUncacheable(res);
      fastPath(req, res, countingFallback);
    });
  });

  afterAll(async () => {
    for (const { server } of [fast, sdk, probe]) {
      server.closeAllConnections();
      server.close();
    }
  });

  /** Sends one request to all three servers; all answers must be identical. Returns it and whether the fast path took it. */
  async function compare(body: string | Buffer, requestHeaders: Record<string, string>): Promise<{ answer: RawAnswer; taken: boolean }> {
    const viaSdk = await rawPost(sdk.url, body, requestHeaders);
    const viaFast = await rawPost(fast.url, body, requestHeaders);
    const before = fallbacks;
    const viaProbe = await rawPost(probe.url, body, requestHeaders);
    expect(viaFast).toEqual(viaSdk);
    expect(viaProbe).toEqual(viaSdk);
    // The gateway's headers for every answer, on both paths: no cache keeps an MCP answer.
    expect(viaFast.headers).toEqual(expect.arrayContaining(['Cache-Control: no-store', 'Vary: Origin, Accept-Encoding']));
    return { answer: viaSdk, taken: fallbacks === before };
  }

  const answered: [string, string][] = [
    ['get_business, numeric id', call(1, 'get_business', {})],
    ['get_business without arguments, string id', call('b-1', 'get_business')],
    ['search_reviews by text', call(2, 'search_reviews', { query: 'the', limit: 3 })],
    ['search_reviews, same filters in another order', call('s-2', 'search_reviews', { limit: 3, query: 'the' })],
    ['search_reviews by rating and date', call(0, 'search_reviews', { rating: 5, since: '2025-01-01', until: '2026-12-31' })],
    ['search_reviews by staff and service', call(Number.MAX_SAFE_INTEGER, 'search_reviews', { min_rating: 3, mentions_technician: technician.name, mentions_service: service.id })],
    ['search_reviews with no match', call(-5, 'search_reviews', { query: 'zzzz-no-such-text' })],
    ['get_review', call('r/"é"', 'get_review', { id: review.id })],
    ['get_review of an unknown id (tool error result)', call(3, 'get_review', { id: '01ARZ3NDEKTSV4RRFFQ69G5FAV' })],
    ['get_reviews_since', call(4, 'get_reviews_since', { date: '2025-06-01' })],
    ['get_insights_overview', call('', 'get_insights_overview', {})],
    ['get_aspect_sentiment by id', call(5, 'get_aspect_sentiment', { aspect: ASPECTS[0].id })],
    ['get_aspect_sentiment by label', call('a', 'get_aspect_sentiment', { aspect: ASPECTS[1].label.toUpperCase() })],
    ['get_aspect_sentiment of an unknown aspect (tool error result)', call(6, 'get_aspect_sentiment', { aspect: 'parking' })],
    ['get_technician', call(7, 'get_technician', { name: technician.name.toLowerCase() })],
    ['get_service', call('svc', 'get_service', { service: service.label })],
    ['get_faq', call(8, 'get_faq', {})],
    ['get_faq filtered', call('f', 'get_faq', { query: 'the' })],
    ['get_rating_trend', call(9, 'get_rating_trend', {})],
  ];

  it.each(answered)('answers %s byte for byte as the SDK path, memoized or not', async (_label, body) => {
    for (let round = 0; round < 2; round += 1) {
      const { answer, taken } = await compare(body, headers());
      expect(taken).toBe(true);
      expect(answer.status).toBe(200);
      expect(answer.headers).toContain(`Mcp-Session-Id: ${sessionId}`);
    }
  });

  // Batches (2025-03-26) answer their tool calls from the same memo; without the fast path the SDK answers each.
  it('answers a batch of every call above byte for byte as the SDK path, memoized or not', async () => {
    const batch = `[${answered.map(([, body]) => body).join(',')}]`;
    for (let round = 0; round < 2; round += 1) {
      const { answer } = await compare(batch, headers({ 'MCP-Protocol-Version': '2025-03-26', 'Mcp-Session-Id': batchSessionId }));
      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.body)).toHaveLength(answered.length);
    }
  });

  it('sends the CORS headers of an allowed Origin like the SDK path', async () => {
    const { answer, taken } = await compare(call(10, 'search_reviews', { query: 'the', limit: 1 }), headers({ Origin: 'http://localhost:6274' }));
    expect(taken).toBe(true);
    expect(answer.headers).toEqual(expect.arrayContaining(['Access-Control-Allow-Origin: http://localhost:6274', 'Access-Control-Expose-Headers: Mcp-Session-Id, Retry-After, Allow']));
  });

  it.each([
    ['in upper case', 'APPLICATION/JSON, TEXT/EVENT-STREAM'],
    ['with weights', 'text/event-stream;q=0.5, application/json'],
  ])('takes an Accept %s, which the SDK path accepts too', async (_label, accept) => {
    const { answer, taken } = await compare(call(29, 'get_faq', {}), headers({ Accept: accept }));
    expect(taken).toBe(true);
    expect(answer.status).toBe(200);
  });

  const declined: [string, string, Record<string, string>, number][] = [
    ['invalid arguments (an isError result)', call(11, 'search_reviews', { limit: 0 }), headers(), 200],
    ['an unknown argument', call(12, 'get_business', { extra: 1 }), headers(), 200],
    ['an unknown tool', call(13, 'delete_everything', {}), headers(), 200],
    ['params the method does not allow', JSON.stringify({ jsonrpc: '2.0', id: 14, method: 'tools/call', params: { arguments: {} } }), headers(), 200],
    ['_meta in params', JSON.stringify({ jsonrpc: '2.0', id: 15, method: 'tools/call', params: { name: 'get_faq', arguments: {}, _meta: { progressToken: 1 } } }), headers(), 200],
    ['tools/list', JSON.stringify({ jsonrpc: '2.0', id: 16, method: 'tools/list' }), headers(), 200],
    ['a notification', JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), headers(), 202],
    ['a batch', `[${call(17, 'get_faq', {})}]`, headers(), 400],
    ['a batch under 2025-03-26, which has batches', `[${call(17, 'get_faq', {})}]`, headers({ 'MCP-Protocol-Version': '2025-03-26', 'Mcp-Session-Id': batchSessionId }), 200],
    ['a fractional id', call(1.5, 'get_faq', {}), headers(), 400],
    ['a forged session', call(18, 'get_faq', {}), headers({ 'Mcp-Session-Id': `${sessionId.slice(0, -2)}AA` }), 404],
    ['a missing session', call(19, 'get_faq', {}), { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' }, 400],
    ['a wrong Accept', call(20, 'get_faq', {}), headers({ Accept: 'application/json' }), 406],
    ['an Accept refusing application/json with q=0', call(21, 'get_faq', {}), headers({ Accept: 'application/json;q=0, text/event-stream' }), 406],
    ['valid JSON that is no JSON-RPC message', '"hi"', headers(), 400],
    ['a Content-Type with a charset', call(22, 'get_faq', {}), headers({ 'Content-Type': 'application/json; charset=utf-8' }), 200],
    ['a wrong Content-Type', call(23, 'get_faq', {}), headers({ 'Content-Type': 'text/plain' }), 415],
    ['an unsupported MCP-Protocol-Version', call(24, 'get_faq', {}), headers({ 'MCP-Protocol-Version': '1999-01-01' }), 400],
    ['a foreign Origin', call(25, 'get_faq', {}), headers({ Origin: 'https://evil.example' }), 403],
  ];

  it.each(declined)('leaves %s to the SDK path, answered as before', async (_label, body, requestHeaders, status) => {
    const { answer, taken } = await compare(body, requestHeaders);
    expect(taken).toBe(false);
    expect(answer.status).toBe(status);
  });

  it('still answers invalid arguments with the SDK path tool error result, worded as no protocol error', async () => {
    const { answer } = await compare(call(27, 'search_reviews', { rating: 9 }), headers());
    expect(JSON.parse(answer.body)).toEqual({
      result: { content: [{ type: 'text', text: 'Invalid arguments for tool search_reviews: Too big: expected number to be <=5 at rating' }], isError: true },
      jsonrpc: '2.0',
      id: 27,
    });
  });

  it('answers unreadable bodies of an accepted request with the SDK path errors', async () => {
    for (const notJson of ['{"jsonrpc":"2.0",', '']) {
      const malformed = await compare(notJson, headers({ Origin: 'http://localhost:6274' }));
      expect(malformed.answer.status).toBe(400);
      expect(JSON.parse(malformed.answer.body)).toMatchObject({ error: { code: -32700 } });
    }
    const oversize = await compare(call(26, 'get_faq', { query: 'x'.repeat(MAX_MCP_BODY_BYTES) }), headers());
    expect(oversize.answer.status).toBe(413);
    const unknownCoding = await compare(call(30, 'get_faq', {}), headers({ 'Content-Encoding': 'bogus' }));
    expect(unknownCoding.answer.status).toBe(415);
    expect(JSON.parse(unknownCoding.answer.body)).toMatchObject({ error: { message: expect.stringContaining('Content-Encoding bogus is not supported') } });
    const notGzip = await compare(call(31, 'get_faq', {}), headers({ 'Content-Encoding': 'gzip' }));
    expect(notGzip.answer.status).toBe(400);
    expect(JSON.parse(notGzip.answer.body)).toMatchObject({ error: { message: 'Bad Request: the body is not valid gzip' } });
    const notUtf8 = await compare(Buffer.from(call(32, 'get_faq', { query: 'caf\xe9' }), 'latin1'), headers());
    expect(notUtf8.answer.status).toBe(400);
    expect(JSON.parse(notUtf8.answer.body)).toMatchObject({ error: { code: -32700, message: expect.stringContaining('not valid UTF-8') } });
    const nested = await compare(call(33, 'search_reviews', { query: JSON.parse(`${'['.repeat(100)}${']'.repeat(100)}`) as unknown }), headers());
    expect(nested.answer.status).toBe(400);
    expect(JSON.parse(nested.answer.body)).toMatchObject({ error: { code: -32600, message: expect.stringContaining('more than 64 levels deep') } });
  });

  it('leaves a tool that throws to the SDK path, which answers its error result', async () => {
    const broken: Snapshot = { ...snapshot, search: { ...snapshot.search, since: () => { throw new Error('index unavailable'); } } };
    const brokenDeps = { config, logger, snapshots: { current: () => broken } };
    const brokenFast = await serve(createMcpGateway({ ...brokenDeps, metrics: createMetrics() }));
    const brokenSdk = await serve(createMcpGateway({ ...brokenDeps, metrics: createMetrics(), toolCallFastPath: false }));
    try {
      const body = call(28, 'get_reviews_since', { date: '2025-06-01' });
      const viaFast = await rawPost(brokenFast.url, body, headers());
      expect(viaFast).toEqual(await rawPost(brokenSdk.url, body, headers()));
      expect(JSON.parse(viaFast.body)).toMatchObject({ result: { isError: true, content: [{ text: 'index unavailable' }] } });
    } finally {
      for (const { server } of [brokenFast, brokenSdk]) {
        server.closeAllConnections();
        server.close();
      }
    }
  });

  it('counts tool calls and requests exactly like the SDK path', async () => {
    // Every request above went to both gateways once; the probe has its own registry.
    expect(await countersOf(fastMetrics)).toEqual(await countersOf(sdkMetrics));
    expect((await countersOf(fastMetrics)).some((line) => line.startsWith('mcp_tool_calls_total{tool="search_reviews",outcome="ok"}'))).toBe(true);
  });
});
