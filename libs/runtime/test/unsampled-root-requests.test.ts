import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ROOT_CONTEXT, SpanKind } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, TraceIdRatioBasedSampler } from '@opentelemetry/sdk-trace-base';
import { activeTraceIds, inRequestSpan, withSyncSpan } from '@reviews/runtime';
import { samplerFromEnv } from '../src/sampling.js';
import { PooledIdGenerator } from '../src/trace-ids.js';
import { startTracedServer, type TracedServer } from './traced-server.js';

// A pod's setup at the chart's default sampling: the runtime's sampler and id generator, which let a
// root request be decided before it has ids, and make the ids of a dropped one only when read.
const RATIO = 0.1;
const ids = new PooledIdGenerator();
const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({
  sampler: samplerFromEnv({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: String(RATIO) }, ids),
  idGenerator: ids,
  spanProcessors: [new SimpleSpanProcessor(exporter)],
});
/** The trace id the handler saw inside the request span, by the request's `n`. */
const seenInside = new Map<string, string | undefined>();
let server: TracedServer;

beforeAll(async () => {
  server = await startTracedServer(provider, (req, res) => {
    const request = new URL(req.url!, 'http://x').searchParams.get('n')!;
    if (req.url!.startsWith('/items/with-child')) inRequestSpan(res, () => withSyncSpan('item lookup', {}, () => seenInside.set(request, activeTraceIds()?.trace_id)));
    res.end('ok');
  });
});

afterAll(() => server.close());

const sdkSampler = new TraceIdRatioBasedSampler(RATIO);
const sdkSamples = (traceId: string) => sdkSampler.shouldSample(ROOT_CONTEXT, traceId).decision === 2;

async function requestLines(count: number, path: string, headers: (n: number) => Record<string, string> = () => ({})): Promise<Record<string, unknown>[]> {
  const { url, lines } = server;
  lines.length = 0;
  exporter.reset();
  for (let n = 0; n < count; n++) await (await fetch(`${url}${path}?n=${n}`, { headers: headers(n) })).text();
  const deadline = Date.now() + 5_000;
  const logged = () => lines.filter((line) => line.includes('"msg":"request"')).length;
  while (logged() < count && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
  return lines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.msg === 'request');
}

describe('root requests decided before they have ids', () => {
  it('records about the ratio of root requests, each with a trace id the SDK samples at that ratio, and logs every request with ids the SDK decides alike', async () => {
    const logged = await requestLines(400, '/items/1');
    expect(logged).toHaveLength(400);
    const recorded = exporter.getFinishedSpans();
    // 40 expected; below 10 or above 90 is a one-in-a-billion draw.
    expect(recorded.length).toBeGreaterThan(10);
    expect(recorded.length).toBeLessThan(90);
    const recordedTraces = new Set(recorded.map((span) => span.spanContext().traceId));
    for (const span of recorded) {
      expect([span.name, span.kind, span.parentSpanContext]).toEqual(['GET /items/:id', SpanKind.SERVER, undefined]);
      expect(sdkSamples(span.spanContext().traceId)).toBe(true);
    }
    const disagreements = logged.filter((line) => sdkSamples(line.trace_id as string) !== recordedTraces.has(line.trace_id as string));
    expect(disagreements).toEqual([]);
    expect(new Set(logged.map((line) => line.trace_id)).size).toBe(400);
    expect(logged.every((line) => /^[0-9a-f]{32}$/.test(line.trace_id as string) && /^[0-9a-f]{16}$/.test(line.span_id as string))).toBe(true);
  });

  it("gives a dropped request's child spans its trace and its decision: they record nothing, and its log line has the same ids", async () => {
    seenInside.clear();
    const logged = await requestLines(100, '/items/with-child');
    const recorded = exporter.getFinishedSpans();
    const recordedTraces = new Set(recorded.map((span) => span.spanContext().traceId));
    let dropped = 0;
    for (const [n, line] of logged.entries()) {
      const traceId = line.trace_id as string;
      expect([n, seenInside.get(String(n))]).toEqual([n, traceId]);
      if (recordedTraces.has(traceId)) {
        // A sampled request records both spans, the child under the request span.
        const spans = recorded.filter((span) => span.spanContext().traceId === traceId);
        expect(spans.map((span) => span.name).sort()).toEqual(['GET /items/:id', 'item lookup']);
      } else {
        dropped++;
        expect(sdkSamples(traceId)).toBe(false);
      }
    }
    expect(dropped).toBeGreaterThan(60);
    expect(recorded.every((span) => recordedTraces.has(span.spanContext().traceId))).toBe(true);
  });

  // A security audit: any client sending a traceparent with the sampled flag had every request traced, whatever the ratio.
  it("samples requests that carry a caller's sampled traceparent at the ratio too, each in a trace of its own linked to the caller's span", async () => {
    const callerTraceId = (n: number) => n.toString(16).padStart(32, 'c');
    const logged = await requestLines(400, '/items/1', (n) => ({ traceparent: `00-${callerTraceId(n)}-b7ad6b7169203331-01` }));
    expect(logged).toHaveLength(400);
    const recorded = exporter.getFinishedSpans();
    expect(recorded.length).toBeGreaterThan(10);
    expect(recorded.length).toBeLessThan(90);
    for (const span of recorded) {
      expect(span.parentSpanContext).toBeUndefined();
      expect(sdkSamples(span.spanContext().traceId)).toBe(true);
      expect(span.links).toEqual([{ context: expect.objectContaining({ spanId: 'b7ad6b7169203331', isRemote: true }) }]);
    }
    expect(logged.some((line) => /^c+[0-9a-f]{0,3}$/.test(line.trace_id as string))).toBe(false);
  });
});
