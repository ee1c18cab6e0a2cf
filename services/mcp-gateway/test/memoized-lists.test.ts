import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createMemoizedLists, type MemoizedLists } from '@reviews/mcp-gateway/memoized-lists';
import { wholeResponse } from '@reviews/mcp-gateway/memoized-tool-calls';
import { fixtureSnapshot, post, rawSession, startGateway, type RunningGateway } from './helpers.js';

const LISTS = ['tools/list', 'prompts/list', 'resources/list', 'resources/templates/list'];
const list = (method: string, id: number | string, params?: Record<string, unknown>) => ({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) });
/** The whole response the memo holds for `request`, as a batch sends it. */
function answer(lists: MemoizedLists, request: Parameters<MemoizedLists['head']>[0], snapshot: Parameters<MemoizedLists['head']>[1], version: string): Buffer | null {
  const head = lists.head(request, snapshot, version);
  return head === null ? null : wholeResponse(head, request.id);
}

describe('resources/read answers sent again', () => {
  let gateway: RunningGateway;
  beforeAll(async () => {
    gateway = await startGateway();
  });
  afterAll(() => gateway.close());

  // The complexity audit: reading reviews.json as a resource cost 192 ms of CPU per request at 20,000 reviews.
  it('are the SDK\'s first answer byte for byte, per URI, and an unknown URI stays an error', async () => {
    const sessionId = await rawSession(gateway.url);
    const headers = { 'Mcp-Session-Id': sessionId };
    const uris = ((await post(gateway.url, list('resources/list', 1), headers)).json as { result: { resources: Array<{ uri: string }> } }).result.resources.map((resource) => resource.uri);
    expect(uris.length).toBeGreaterThan(1);
    for (const uri of uris) {
      const first = await post(gateway.url, list('resources/read', 7, { uri }), headers);
      expect(first.json).toMatchObject({ result: { contents: [{ uri }] } });
      expect((await post(gateway.url, list('resources/read', 7, { uri }), headers)).text).toBe(first.text);
      expect((await post(gateway.url, list('resources/read', 'x', { uri }), headers)).text).toBe(first.text.replace(/"id":7}$/, '"id":"x"}'));
    }
    const lists = createMemoizedLists();
    const snapshot = fixtureSnapshot();
    lists.record(list('resources/read', 1, { uri: 'a' }) as never, { jsonrpc: '2.0', id: 1, result: { contents: [] } }, snapshot, '2025-06-18');
    expect(answer(lists, list('resources/read', 2, { uri: 'a' }) as never, snapshot, '2025-06-18')?.toString()).toBe('{"result":{"contents":[]},"jsonrpc":"2.0","id":2}');
    expect(answer(lists, list('resources/read', 2, { uri: 'b' }) as never, snapshot, '2025-06-18')).toBeNull();
    // One entry whatever the protocol version or _meta: the answer does not depend on them.
    expect(answer(lists, list('resources/read', 2, { uri: 'a', _meta: {} }) as never, snapshot, '2025-03-26')?.toString()).toBe('{"result":{"contents":[]},"jsonrpc":"2.0","id":2}');
    expect(answer(lists, list('resources/read', 2, { uri: 'a', other: 1 }) as never, snapshot, '2025-06-18')).toBeNull();
    lists.record(list('resources/read', 3, { uri: 'nope' }) as never, { jsonrpc: '2.0', id: 3, error: { code: -32002, message: 'Resource not found' } }, snapshot, '2025-06-18');
    expect(answer(lists, list('resources/read', 4, { uri: 'nope' }) as never, snapshot, '2025-06-18')).toBeNull();
  });
});

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
    expect(answer(lists, request('tools/list', 1), older, '2025-06-18')).toBeNull();
    lists.record(request('tools/list', 1), response(1, { tools: ['a'] }), older, '2025-06-18');
    expect(answer(lists, request('tools/list', 2), older, '2025-06-18')?.toString()).toBe('{"result":{"tools":["a"]},"jsonrpc":"2.0","id":2}');
    expect(answer(lists, request('tools/list', 2, {}), older, '2025-06-18')?.toString()).toBe('{"result":{"tools":["a"]},"jsonrpc":"2.0","id":2}');
    expect(answer(lists, request('tools/list', 2), newer, '2025-06-18')).toBeNull();
    expect(answer(lists, request('tools/list', 2), older, '2025-03-26')).toBeNull();
    expect(answer(lists, request('prompts/list', 2), older, '2025-06-18')).toBeNull();
    expect(answer(lists, request('tools/list', 2, { cursor: 'x' }), older, '2025-06-18')).toBeNull();
  });

  it('record only results to lists requested without params, answered to their own id', () => {
    const lists = createMemoizedLists();
    lists.record(request('tools/list', 1, { _meta: { progressToken: 1 } }), response(1, { tools: [] }), null, '2025-06-18');
    lists.record(request('tools/list', 1), response(2, { tools: [] }), null, '2025-06-18');
    lists.record(request('tools/list', 1), { jsonrpc: '2.0', id: 1, error: { code: -32603, message: 'Internal error' } }, null, '2025-06-18');
    lists.record(request('tools/call', 1), response(1, { content: [] }), null, '2025-06-18');
    expect(answer(lists, request('tools/list', 3), null, '2025-06-18')).toBeNull();
    expect(answer(lists, request('tools/call', 3), null, '2025-06-18')).toBeNull();
    lists.record(request('tools/list', 1), response(1, { tools: [] }), null, '2025-06-18');
    expect(answer(lists, request('tools/list', 3), null, '2025-06-18')?.toString()).toBe('{"result":{"tools":[]},"jsonrpc":"2.0","id":3}');
  });
});
