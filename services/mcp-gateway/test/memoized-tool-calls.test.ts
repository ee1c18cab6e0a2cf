import { describe, expect, it } from '@jest/globals';
import { buildSnapshotFromInput } from '@reviews/domain';
import { createMetrics } from '@reviews/runtime';
import { createGatewayMetrics } from '@reviews/mcp-gateway/metrics';
import { createMemoizedToolCalls } from '@reviews/mcp-gateway/memoized-tool-calls';
import { buildDataset } from '../../../libs/domain/test/fixtures.js';
import { BASE_URL } from './helpers.js';

const snapshotOf = (seed: number) => buildSnapshotFromInput(buildDataset({ reviews: 30, seed }), { baseUrl: BASE_URL, publishedAt: new Date('2026-01-01T00:00:00Z') });
const call = (id: number, args: Record<string, unknown>) => ({ jsonrpc: '2.0' as const, id, method: 'tools/call', params: { name: 'search_reviews', arguments: args } });

describe('memoized tool calls', () => {
  it('answer the same params from each dataset version\'s own results, and count every call', async () => {
    const metrics = createMetrics();
    const calls = createMemoizedToolCalls(createGatewayMetrics(metrics));
    const [older, newer] = [snapshotOf(1), snapshotOf(2)];
    const fromOlder = calls(call(1, { limit: 3 }), older);
    const fromNewer = calls(call(2, { limit: 3 }), newer);
    expect(fromOlder).not.toBeNull();
    expect(fromNewer!.head.equals(fromOlder!.head)).toBe(false);
    expect(calls(call(3, { limit: 3 }), older)).toBe(fromOlder);
    expect(calls(call(4, { limit: 3 }), newer)).toBe(fromNewer);
    // Other params, other answers; arguments the tool refuses go to the SDK path, however often they come.
    expect(calls(call(5, { limit: 4 }), older)!.head.equals(fromOlder!.head)).toBe(false);
    for (const id of [6, 7]) expect(calls(call(id, { limit: 0 }), older)).toBeNull();
    const counted = (await metrics.registry.getSingleMetric('mcp_tool_calls_total')!.get()).values.find((v) => v.labels['tool'] === 'search_reviews' && v.labels['outcome'] === 'ok');
    expect(counted?.value).toBe(5);
  });

  it('keep no more than their byte budget however many distinct calls with large results come', () => {
    // 200 reviews dated 2024-2025: each get_reviews_since below returns its limit of 100, ~60 KB; 400 distinct dates are ~24 MB.
    const snapshot = buildSnapshotFromInput(buildDataset({ reviews: 200, seed: 5 }), { baseUrl: BASE_URL, publishedAt: new Date('2025-07-01T12:00:00Z') });
    let searches = 0;
    const counted = { ...snapshot, search: { ...snapshot.search, since: (date: string) => (searches++, snapshot.search.since(date)) } };
    const calls = createMemoizedToolCalls(createGatewayMetrics(createMetrics()));
    const since = (id: number, day: number) => ({ jsonrpc: '2.0' as const, id, method: 'tools/call', params: { name: 'get_reviews_since', arguments: { date: new Date(Date.UTC(2000, 0, 1 + day)).toISOString().slice(0, 10) } } });
    const first = calls(since(0, 0), counted);
    expect(first!.head.length).toBeGreaterThan(50_000);
    expect(calls(since(1, 0), counted)).toBe(first);
    for (let day = 1; day < 400; day++) calls(since(day + 1, day), counted);
    // The first call's result was evicted from both memos: answering it again runs the search again.
    const before = searches;
    expect(calls(since(500, 0), counted)!.head.equals(first!.head)).toBe(true);
    expect(searches).toBe(before + 1);
  });
});
