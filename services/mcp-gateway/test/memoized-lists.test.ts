import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createMemoizedLists } from '@reviews/mcp-gateway/memoized-lists';
import { fixtureSnapshot, post, rawSession, startGateway, type RunningGateway } from './helpers.js';

const LISTS = ['tools/list', 'prompts/list', 'resources/list', 'resources/templates/list'];
const list = (method: string, id: number | string, params?: Record<string, unknown>) => ({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) });

describe('list answers sent again', () => {
  let gateway: RunningGateway;
  beforeAll(async () => {
    gateway = await startGateway();
  });
  afterAll(() => gateway.close());

  it.each(['2025-06-18', '2025-03-26'])('are the SDK\'s first answer byte for byte, alone and in batches (MCP %s)', async (version) => {
    const sessionId = await rawSession(gateway.url, version);
    const headers = { 'Mcp-Session-Id': sessionId, 'MCP-Protocol-Version': version };
    for (const method of LISTS) {
      const first = await post(gateway.url, list(method, 7), headers);
      const again = await post(gateway.url, list(method, 7), headers);
      expect(first.status).toBe(200);
      expect([again.status, again.headers.get('content-type'), again.headers.get('mcp-session-id'), again.text]).toEqual([200, first.headers.get('content-type'), sessionId, first.text]);
      // Another id, and params the SDK reads (_meta): the same result either way.
      const otherId = await post(gateway.url, list(method, 'eight'), headers);
      expect(otherId.text).toBe(first.text.replace(/"id":7}$/, '"id":"eight"}'));
      const withMeta = await post(gateway.url, list(method, 7, { _meta: { progressToken: 1 } }), headers);
      expect(withMeta.text).toBe(first.text);
    }
    if (version === '2025-03-26') {
      const batch = await post(gateway.url, LISTS.map((method, id) => list(method, id)), headers);
      const alone = await Promise.all(LISTS.map((method, id) => post(gateway.url, list(method, id), headers)));
      expect(batch.text).toBe(`[${alone.map((answer) => answer.text).join(',')}]`);
    }
  });
});

describe('createMemoizedLists', () => {
  const response = (id: number, result: unknown) => ({ jsonrpc: '2.0' as const, id, result: result as Record<string, unknown> });
  const request = (method: string, id: number, params?: Record<string, unknown>) => ({ jsonrpc: '2.0' as const, id, method, ...(params === undefined ? {} : { params }) });

  it('answer a list without params from the recorded result of its dataset and protocol version only', () => {
    const lists = createMemoizedLists();
    const [older, newer] = [fixtureSnapshot(), fixtureSnapshot()];
    expect(lists.answer(request('tools/list', 1), older, '2025-06-18')).toBeNull();
    lists.record(request('tools/list', 1), response(1, { tools: ['a'] }), older, '2025-06-18');
    expect(lists.answer(request('tools/list', 2), older, '2025-06-18')?.toString()).toBe('{"result":{"tools":["a"]},"jsonrpc":"2.0","id":2}');
    expect(lists.answer(request('tools/list', 2, {}), older, '2025-06-18')?.toString()).toBe('{"result":{"tools":["a"]},"jsonrpc":"2.0","id":2}');
    expect(lists.answer(request('tools/list', 2), newer, '2025-06-18')).toBeNull();
    expect(lists.answer(request('tools/list', 2), older, '2025-03-26')).toBeNull();
    expect(lists.answer(request('prompts/list', 2), older, '2025-06-18')).toBeNull();
    expect(lists.answer(request('tools/list', 2, { cursor: 'x' }), older, '2025-06-18')).toBeNull();
  });

  it('record only results to lists requested without params, answered to their own id', () => {
    const lists = createMemoizedLists();
    lists.record(request('tools/list', 1, { _meta: { progressToken: 1 } }), response(1, { tools: [] }), null, '2025-06-18');
    lists.record(request('tools/list', 1), response(2, { tools: [] }), null, '2025-06-18');
    lists.record(request('tools/list', 1), { jsonrpc: '2.0', id: 1, error: { code: -32603, message: 'Internal error' } }, null, '2025-06-18');
    lists.record(request('tools/call', 1), response(1, { content: [] }), null, '2025-06-18');
    expect(lists.answer(request('tools/list', 3), null, '2025-06-18')).toBeNull();
    expect(lists.answer(request('tools/call', 3), null, '2025-06-18')).toBeNull();
    lists.record(request('tools/list', 1), response(1, { tools: [] }), null, '2025-06-18');
    expect(lists.answer(request('tools/list', 3), null, '2025-06-18')?.toString()).toBe('{"result":{"tools":[]},"jsonrpc":"2.0","id":3}');
  });
});
