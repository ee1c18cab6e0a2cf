import { describe, expect, it } from '@jest/globals';
import { performance } from 'node:perf_hooks';
import { SpanStatusCode, TraceFlags } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { RequestSpan, requestSpanSink, type RequestSpanSink } from '../src/http/request-span.js';

function setup(): { exporter: InMemorySpanExporter; sink: RequestSpanSink } {
  const exporter = new InMemorySpanExporter();
  const sink = requestSpanSink(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).getTracer('public-reviews'));
  if (sink === null) throw new Error('the installed SDK yields no request span sink');
  return { exporter, sink };
}

const context = { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: TraceFlags.SAMPLED };

describe('RequestSpan', () => {
  it('is exported once, when it ends, and changes nothing after that', () => {
    const { exporter, sink } = setup();
    const span = new RequestSpan(sink, 'GET', context, {});
    span.updateName('GET /reviews.json').setAttribute('http.route', '/reviews.json');
    expect(exporter.getFinishedSpans()).toEqual([]);
    span.end();
    span.end();
    span.setAttribute('late', 1).updateName('late').setStatus({ code: SpanStatusCode.ERROR });
    expect(exporter.getFinishedSpans()).toHaveLength(1);
    expect(span.isRecording()).toBe(false);
    expect(span.name).toBe('GET /reviews.json');
    expect(span.attributes).toEqual({ 'http.route': '/reviews.json' });
    expect(span.status).toEqual({ code: SpanStatusCode.UNSET });
  });

  it('records exceptions as events and keeps an OK status final, as the SDK does', () => {
    const { exporter, sink } = setup();
    const span = new RequestSpan(sink, 'GET', context, {});
    span.recordException(new TypeError('boom'));
    span.setStatus({ code: SpanStatusCode.ERROR, message: 'boom' });
    span.addEvent('retry', { attempt: 2 });
    span.end();
    const [exported] = exporter.getFinishedSpans();
    expect(exported?.events.map((e) => [e.name, e.attributes])).toEqual([
      ['exception', { 'exception.type': 'TypeError', 'exception.message': 'boom', 'exception.stacktrace': expect.stringContaining('TypeError: boom') }],
      ['retry', { attempt: 2 }],
    ]);
    expect(exported?.status).toEqual({ code: SpanStatusCode.ERROR, message: 'boom' });
    const ok = new RequestSpan(sink, 'GET', context, {});
    ok.setStatus({ code: SpanStatusCode.OK });
    ok.setStatus({ code: SpanStatusCode.ERROR });
    expect(ok.status.code).toBe(SpanStatusCode.OK);
  });

  it('reads a time given in place of the attributes as the event time, as the SDK does', () => {
    const { sink } = setup();
    const span = new RequestSpan(sink, 'GET', context, {});
    span.addEvent('at epoch', new Date(1_500));
    span.addEvent('with both', { attempt: 1 }, [2, 5]);
    expect(span.events.map((e) => [e.name, e.attributes, e.time])).toEqual([
      ['at epoch', {}, [1, 500_000_000]],
      ['with both', { attempt: 1 }, [2, 5]],
    ]);
  });

  it('ends a span given an end before its start at its start, as the SDK does', () => {
    const { sink } = setup();
    const span = new RequestSpan(sink, 'GET', context, {});
    span.end(new Date(Date.now() - 60_000));
    expect(span.duration).toEqual([0, 0]);
    expect(span.endTime).toEqual(span.startTime);
  });

  it('keeps each span its own status, links, events and attributes, starting from the same empty ones', () => {
    const { sink } = setup();
    const sampledWith = { 'sampler.rule': 'default' };
    const changed = new RequestSpan(sink, 'GET', context, sampledWith);
    const untouched = new RequestSpan(sink, 'GET', context, sampledWith);
    changed.setStatus({ code: SpanStatusCode.ERROR, message: 'boom' });
    changed.addLink({ context });
    changed.addEvent('retry');
    changed.setAttribute('http.route', '/reviews.json');
    expect(changed.links).toHaveLength(1);
    expect(changed.events).toHaveLength(1);
    expect(untouched.status).toEqual({ code: SpanStatusCode.UNSET });
    expect(untouched.links).toEqual([]);
    expect(untouched.events).toEqual([]);
    expect(untouched.attributes).toEqual({ 'sampler.rule': 'default' });
    expect(sampledWith).toEqual({ 'sampler.rule': 'default' });
  });

  it('reads its start, end and duration as the SDK span does: zero until it ends', () => {
    const { sink } = setup();
    // Span times are read from the monotonic clock, as the SDK's are: Date.now() drifts from it by milliseconds.
    const clock = () => performance.timeOrigin + performance.now();
    const before = clock();
    const span = new RequestSpan(sink, 'GET', context, undefined);
    const startMillis = span.startTime[0] * 1000 + span.startTime[1] / 1e6;
    expect(startMillis).toBeGreaterThanOrEqual(before - 1);
    expect(startMillis).toBeLessThanOrEqual(clock() + 1);
    expect(span.endTime).toEqual([0, 0]);
    expect(span.duration).toEqual([0, 0]);
    span.end(startMillis + 1500.25);
    expect(span.duration[0]).toBe(1);
    expect(span.duration[1]).toBeCloseTo(500_250_000, -3);
    expect(span.endTime[0] * 1000 + span.endTime[1] / 1e6).toBeCloseTo(startMillis + 1500.25, 3);
  });

  it('ends at a performance.now() reading, as observeRequest passes the one its histogram took', () => {
    const { sink } = setup();
    const before = performance.now();
    const span = new RequestSpan(sink, 'GET', context, undefined);
    const after = performance.now();
    span.end(after + 2.5);
    const durationMillis = span.duration[0] * 1000 + span.duration[1] / 1e6;
    expect(durationMillis).toBeGreaterThanOrEqual(2.5);
    expect(durationMillis).toBeLessThanOrEqual(2.5 + (after - before) + 1e-6);
    const endMillis = span.endTime[0] * 1000 + span.endTime[1] / 1e6;
    const startMillis = span.startTime[0] * 1000 + span.startTime[1] / 1e6;
    expect(endMillis - startMillis).toBeCloseTo(durationMillis, 2);
  });
});
