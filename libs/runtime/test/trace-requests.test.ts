import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { context, ProxyTracerProvider, SpanKind, trace } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import { core, tracing } from '@opentelemetry/sdk-node';
import { inRequestSpan, withSyncSpan } from '@reviews/runtime';
import { RequestSpan, requestSpanSink } from '../src/http/request-span.js';
import { startTracedServer, type TracedServer } from './traced-server.js';

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
let server: TracedServer;
let url: string;
let lines: string[];

beforeAll(async () => {
  server = await startTracedServer(provider, (req, res) => {
    if (req.url === '/items/with-child') inRequestSpan(res, () => withSyncSpan('item lookup', {}, () => undefined));
    res.end('ok');
  });
  ({ url, lines } = server);
});

afterAll(() => server.close());

describe('traceRequests', () => {
  it("starts a trace of its own, linked to the caller's span, names the span after the route template and puts its ids on the request log line", async () => {
    const traceId = '0af7651916cd43dd8448eb211c80319c';
    const response = await fetch(`${url}/items/42?secret=x`, { headers: { traceparent: `00-${traceId}-b7ad6b7169203331-01` } });
    expect(response.status).toBe(200);
    await response.text();
    const deadline = Date.now() + 2_000;
    while (exporter.getFinishedSpans().length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    const [span] = exporter.getFinishedSpans();
    expect(span?.name).toBe('GET /items/:id');
    expect(span?.spanContext().traceId).not.toBe(traceId);
    expect(span?.parentSpanContext).toBeUndefined();
    expect(span?.links).toEqual([{ context: expect.objectContaining({ traceId, spanId: 'b7ad6b7169203331', isRemote: true }) }]);
    expect(span?.attributes).toEqual({ 'http.request.method': 'GET', 'http.route': '/items/:id', 'http.response.status_code': 200 });
    const log = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === 'request');
    expect(log).toMatchObject({ method: 'GET', route: '/items/:id', status: 200, trace_id: span?.spanContext().traceId, span_id: span?.spanContext().spanId });
    expect(lines.join('\n')).not.toContain('/items/42');
  });

  it('parents spans started in inRequestSpan by the request span, and leaves other code outside the trace', async () => {
    exporter.reset();
    const response = await fetch(`${url}/items/with-child`);
    await response.text();
    const deadline = Date.now() + 2_000;
    while (exporter.getFinishedSpans().length < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    const child = exporter.getFinishedSpans().find((s) => s.name === 'item lookup');
    const server = exporter.getFinishedSpans().find((s) => s.name === 'GET /items/:id');
    expect(child?.spanContext().traceId).toBe(server?.spanContext().traceId);
    expect(child?.parentSpanContext?.spanId).toBe(server?.spanContext().spanId);
    expect(trace.getSpan(context.active())).toBeUndefined();
  });

  it("records the request span outside the SDK's tracer and hands it to the SDK's processor, which exports it", async () => {
    exporter.reset();
    // Span times are read from the monotonic clock, as the SDK's are: Date.now() drifts from it by milliseconds.
    const clock = () => performance.timeOrigin + performance.now();
    const before = clock();
    const response = await fetch(`${url}/items/7`);
    await response.text();
    const deadline = Date.now() + 2_000;
    while (exporter.getFinishedSpans().length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    const [span] = exporter.getFinishedSpans();
    expect(span).toBeInstanceOf(RequestSpan);
    expect(span?.kind).toBe(SpanKind.SERVER);
    expect(span?.instrumentationScope.name).toBe('public-reviews');
    expect(span?.resource.attributes['service.name']).toEqual(expect.any(String));
    expect(span?.parentSpanContext).toBeUndefined();
    const nanos = ([seconds, fraction]: [number, number]) => seconds * 1e9 + fraction;
    const start = nanos(span!.startTime);
    const end = nanos(span!.endTime);
    expect(start / 1e6).toBeGreaterThanOrEqual(before - 1);
    expect(start / 1e6).toBeLessThanOrEqual(clock());
    expect(end).toBeGreaterThanOrEqual(start);
    expect(Math.abs(nanos(span!.duration) - (end - start))).toBeLessThan(1e6);
    // What the OTLP exporters send: the same serialization the SDK's own spans go through.
    const request = JSON.parse(new TextDecoder().decode(JsonTraceSerializer.serializeRequest([span!]))) as {
      resourceSpans: { scopeSpans: { scope: { name: string }; spans: Record<string, unknown>[] }[] }[];
    };
    const [{ scopeSpans: [{ scope, spans: [exported] }] }] = request.resourceSpans as [{ scopeSpans: [{ scope: { name: string }; spans: [Record<string, unknown>] }] }];
    expect(scope.name).toBe('public-reviews');
    expect(exported).toMatchObject({ name: 'GET /items/:id', kind: 2, traceId: span!.spanContext().traceId, spanId: span!.spanContext().spanId, status: { code: 0 } });
    expect(exported.attributes).toEqual(expect.arrayContaining([{ key: 'http.response.status_code', value: { intValue: 200 } }]));
  });

  it("lets the sampler decide, not the caller: a caller's unsampled trace is recorded here, child spans too, and a malformed traceparent is no link", async () => {
    exporter.reset();
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    await (await fetch(`${url}/items/with-child`, { headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-00` } })).text();
    await (await fetch(`${url}/items/with-child`, { headers: { traceparent: `00-${traceId}-0000000000000000-01` } })).text();
    const deadline = Date.now() + 2_000;
    while (exporter.getFinishedSpans().length < 4 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    const servers = exporter.getFinishedSpans().filter((span) => span.name === 'GET /items/:id');
    expect(servers.map((span) => span.links.map((link) => link.context.spanId))).toEqual([['00f067aa0ba902b7'], []]);
    expect(exporter.getFinishedSpans().filter((span) => span.name === 'item lookup')).toHaveLength(2);
  });

  it('finds the sink in the tracer of the one installed SDK, and none in the no-op tracer', () => {
    // The OpenTelemetry packages are pinned to the versions sdk-node pins, so npm installs one copy of
    // each: pods run the same SDK these tests use. A second copy (a version that drifted) brought
    // ~1,600 more modules and 14 MB of heap to every traced process.
    expect(tracing.BasicTracerProvider).toBe(BasicTracerProvider);
    expect(core.W3CTraceContextPropagator).toBe(W3CTraceContextPropagator);
    expect(requestSpanSink(provider.getTracer('public-reviews'))).not.toBeNull();
    expect(requestSpanSink(new ProxyTracerProvider().getTracer('x'))).toBeNull();
  });
});
