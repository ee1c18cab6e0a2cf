import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { buildSnapshotFromInput, type Snapshot } from '@reviews/domain';
import { BATCH_RESPONSE_TOO_LARGE, MAX_BATCH_RESPONSE_BYTES } from '@reviews/mcp-gateway/batch';
import { buildDataset } from '../../../libs/domain/test/fixtures.js';
import { BASE_URL, post, rawSession, startGateway, type RunningGateway } from './helpers.js';

// What one JSON-RPC batch may cost the gateway (MCP 2025-03-26, the version these sessions negotiate; a
// request without MCP-Protocol-Version speaks its session's version): its tool calls share the fast path's memoized results, its responses
// have a budget, and other requests are served while it runs.

const sinceCall = (id: number | string, date: string) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'get_reviews_since', arguments: { date } } });
/** The first day of the index-th month from January of `year`: distinct days, so no two calls share a memo entry. */
const nthMonth = (year: number, index: number) => `${year + Math.floor(index / 12)}-${String((index % 12) + 1).padStart(2, '0')}-01`;

async function toolCallCount(gateway: RunningGateway, outcome: 'ok' | 'error'): Promise<number> {
  const values = (await gateway.metrics.registry.getSingleMetric('mcp_tool_calls_total')?.get())?.values ?? [];
  return values.find((value) => value.labels['tool'] === 'get_reviews_since' && value.labels['outcome'] === outcome)?.value ?? 0;
}

/** The snapshot with its get_reviews_since search counted, and made to cost `busyMs` of CPU per run. */
function instrumented(snapshot: Snapshot, busyMs = 0): { snapshot: Snapshot; runs: () => number } {
  let runs = 0;
  const since: Snapshot['search']['since'] = (date) => {
    runs += 1;
    const until = performance.now() + busyMs;
    while (performance.now() < until);
    return snapshot.search.since(date);
  };
  return { snapshot: { ...snapshot, search: { ...snapshot.search, since } }, runs: () => runs };
}

describe('the cost of a JSON-RPC batch', () => {
  // 200 reviews dated 2024-2025: one get_reviews_since over all of them is about 120 KB, so 100 of them are three times the budget.
  const snapshot = buildSnapshotFromInput(buildDataset({ reviews: 200, seed: 5 }), { baseUrl: BASE_URL, publishedAt: new Date('2025-07-01T12:00:00Z') });
  const counted = instrumented(snapshot);
  let gateway: RunningGateway;
  let sessionId: string;

  beforeAll(async () => {
    gateway = await startGateway({ snapshot: counted.snapshot });
    sessionId = await rawSession(gateway.url, '2025-03-26');
  });
  afterAll(() => gateway.close());

  it('answers tool calls from the results the fast path memoized, and runs a call repeated in the batch once', async () => {
    const alone = await post(gateway.url, sinceCall('alone', '2000-01-01'), { 'Mcp-Session-Id': sessionId });
    expect(alone.status).toBe(200);
    const runs = counted.runs();
    const response = await post(gateway.url, [sinceCall(1, '2000-01-01'), sinceCall(2, '2000-02-01'), sinceCall(3, '2000-02-01')], { 'Mcp-Session-Id': sessionId });
    expect(response.status).toBe(200);
    // The first call was memoized by the single request, the third by the second.
    expect(counted.runs()).toBe(runs + 1);
    const [first, second, third] = response.json as { id: number; result: unknown }[];
    expect(first).toEqual({ ...(alone.json as object), id: 1 });
    expect(third).toEqual({ ...second, id: 3 });
  });

  it(`stops running requests once the batch's responses reach ${MAX_BATCH_RESPONSE_BYTES} bytes, and says to send fewer per batch`, async () => {
    const [runs, errors] = [counted.runs(), await toolCallCount(gateway, 'error')];
    const batch = Array.from({ length: 100 }, (_, index) => sinceCall(index, nthMonth(1900, index)));
    const response = await post(gateway.url, batch, { 'Mcp-Session-Id': sessionId });
    expect(response.status).toBe(200);
    const answers = response.json as { id: number; result?: unknown; error?: unknown }[];
    expect(answers.map((answer) => answer.id)).toEqual(batch.map((call) => call.id));

    const served = answers.findIndex((answer) => answer.error !== undefined);
    expect(served).toBeGreaterThan(0);
    expect(answers.slice(0, served).every((answer) => answer.result !== undefined)).toBe(true);
    // The responses served stay within the budget but for the last one, which spent it.
    const sizes = answers.slice(0, served).map((answer) => Buffer.byteLength(JSON.stringify(answer)));
    const beforeLast = sizes.slice(0, -1).reduce((sum, size) => sum + size, 0);
    expect(beforeLast).toBeLessThan(MAX_BATCH_RESPONSE_BYTES);
    expect(beforeLast + (sizes.at(-1) ?? 0)).toBeGreaterThanOrEqual(MAX_BATCH_RESPONSE_BYTES);
    expect(Buffer.byteLength(response.text)).toBeLessThan(MAX_BATCH_RESPONSE_BYTES + 2 * (sizes.at(-1) ?? 0));
    for (const answer of answers.slice(served)) {
      expect(answer).toEqual({
        jsonrpc: '2.0',
        error: { code: BATCH_RESPONSE_TOO_LARGE, message: expect.stringMatching(/^Batch response too large: .* was not run; send fewer calls per batch$/) },
        id: answer.id,
      });
    }
    // Refused requests never ran, and count as failed tool calls.
    expect(counted.runs()).toBe(runs + served);
    expect(await toolCallCount(gateway, 'error')).toBe(errors + batch.length - served);
  });

  it('lets other requests be answered while a batch of expensive calls runs', async () => {
    const slow = instrumented(snapshot, 10);
    const slowGateway = await startGateway({ snapshot: slow.snapshot });
    try {
      const session = { 'Mcp-Session-Id': await rawSession(slowGateway.url, '2025-03-26') };
      // After every review of the fixture: small results, so the whole batch runs within its budget.
      const batch = Array.from({ length: 100 }, (_, index) => sinceCall(index, nthMonth(2030, index)));
      let batchAnswered = false;
      const batchResponse = post(slowGateway.url, batch, session).then((response) => {
        batchAnswered = true;
        return response;
      });
      for (let polls = 0; slow.runs() === 0 && polls < 500; polls += 1) await delay(10);
      expect(slow.runs()).toBeGreaterThan(0);

      const single = await post(slowGateway.url, sinceCall('single', '2000-01-01'), session);
      expect(single.status).toBe(200);
      expect(batchAnswered).toBe(false);
      expect((await batchResponse).json).toHaveLength(100);
    } finally {
      await slowGateway.close();
    }
  });
});
