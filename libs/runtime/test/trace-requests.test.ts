import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { createHttpServer, createLogger, createMetrics, inRequestSpan, observeRequest, withSyncSpan } from '@reviews/runtime';
import { traceRequests } from '../src/http/trace-requests.js';

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const contextManager = new AsyncLocalStorageContextManager().enable();
const lines: string[] = [];
let server: Server;
let url: string;

beforeAll(async () => {
  trace.setGlobalTracerProvider(provider);
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  const logger = createLogger('test', 'info', { write: (line: string) => void lines.push(line) });
  const metrics = createMetrics();
  server = createHttpServer(
    traceRequests((req, res) => {
      observeRequest(metrics, 'test', req, res, '/items/:id', logger);
      if (req.url === '/items/with-child') inRequestSpan(res, () => withSyncSpan('item lookup', {}, () => undefined));
      res.end('ok');
    }),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await provider.shutdown();
  contextManager.disable();
  trace.disable();
  context.disable();
  propagation.disable();
});

describe('traceRequests', () => {
  it("joins the caller's trace, names the span after the route template and puts its ids on the request log line", async () => {
    const traceId = '0af7651916cd43dd8448eb211c80319c';
    const response = await fetch(`${url}/items/42?secret=x`, { headers: { traceparent: `00-${traceId}-b7ad6b7169203331-01` } });
    expect(response.status).toBe(200);
    await response.text();
    const deadline = Date.now() + 2_000;
    while (exporter.getFinishedSpans().length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    const [span] = exporter.getFinishedSpans();
    expect(span?.name).toBe('GET /items/:id');
    expect(span?.spanContext().traceId).toBe(traceId);
    expect(span?.parentSpanContext?.spanId).toBe('b7ad6b7169203331');
    expect(span?.attributes).toEqual({ 'http.request.method': 'GET', 'http.route': '/items/:id', 'http.response.status_code': 200 });
    const log = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === 'request');
    expect(log).toMatchObject({ method: 'GET', route: '/items/:id', status: 200, trace_id: traceId, span_id: span?.spanContext().spanId });
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
});
