import type { IncomingMessage, ServerResponse } from 'node:http';
import { context, propagation, ROOT_CONTEXT, SpanKind, trace, TraceFlags, type Attributes, type Link, type ProxyTracerProvider, type Span, type SpanContext } from '@opentelemetry/api';
import { NO_LINKS, RequestSpan, requestSpanSink, type RequestSpanSink } from './request-span.js';
import type { RequestHandler } from './server.js';
import { ALL_WORDS, NOT_RECORD, RECORD_AND_SAMPLED, rootUpperBoundOf } from '../sampling.js';
import { PooledIdGenerator } from '../trace-ids.js';
import { TRACER_NAME } from '../tracing.js';

const SPAN = Symbol('serverSpan');
/** A request span starts without attributes, as the sampler sees it; shared, not allocated per request. */
const NO_ATTRIBUTES: Attributes = Object.freeze({});

/**
 * The span of a request (each is the root of its trace) the sampler dropped, until something reads it: one per
 * sink, shared by every such request. Most are answered without a child span or a log line at info,
 * so they never need ids, and making them (a trace id, a span id, a span context and a span) was most
 * of what tracing cost an unsampled request. requestSpan and inRequestSpan make them when asked.
 */
class UnsampledRoot {
  constructor(
    private readonly ids: PooledIdGenerator,
    /** The sampler's root upper bound (sampling.ts): a root request is sampled when its word is below it. */
    private readonly bound: number,
  ) {}

  /**
   * A root request's trace id if the sampler keeps it, else undefined. A ratio draws the word the id's
   * words will XOR to (generateTraceIdWithXor), as the sampler would decide from that id; sampling
   * all or nothing draws no word, and keeps the pool's plain ids.
   */
  sampledTraceId(): string | undefined {
    if (this.bound === ALL_WORDS) return this.ids.generateTraceId();
    if (this.bound === 0) return undefined;
    const word = this.ids.randomWord();
    return word < this.bound ? this.ids.generateTraceIdWithXor(word) : undefined;
  }

  /** As a span the sampler dropped answers: the checks on every request's path need no type test. */
  isRecording(): false {
    return false;
  }

  /** Ids as the dropped request's: a trace id whose words XOR to at least the bound, so every sampler at this ratio drops it too. */
  span(): Span {
    return trace.wrapSpanContext({ traceId: this.#droppedTraceId(), spanId: this.ids.generateSpanId(), traceFlags: TraceFlags.NONE });
  }

  #droppedTraceId(): string {
    if (this.bound === 0) return this.ids.generateTraceId();
    const xor = this.bound + Math.floor((this.ids.randomWord() / ALL_WORDS) * (ALL_WORDS - this.bound));
    return this.ids.generateTraceIdWithXor(xor);
  }
}

/** Requests can be decided before they have ids when the sink's sampler and id generator are the runtime's own. */
function unsampledRootOf(sink: RequestSpanSink): UnsampledRoot | undefined {
  const bound = rootUpperBoundOf(sink.sampler);
  return bound !== undefined && sink.ids instanceof PooledIdGenerator ? new UnsampledRoot(sink.ids, bound) : undefined;
}

interface Traced extends ServerResponse {
  [SPAN]?: Span | UnsampledRoot;
}

/** The SDK tracer behind the API's proxy, once the SDK registered its provider. */
function registeredTracer(): unknown {
  const provider = trace.getTracerProvider();
  const registered = 'getDelegate' in provider ? (provider as ProxyTracerProvider).getDelegate() : provider;
  return registered.getTracer(TRACER_NAME);
}

/**
 * The SDK's decision for a request, and its span: a RequestSpan when sampled, otherwise a
 * non-recording span that carries the decision to child spans (the shared UnsampledRoot that stands
 * for one until read, when the sampler is the runtime's). Mirrors the SDK tracer's startSpan for a
 * root SERVER span without attributes; tracing is never suppressed in the root context.
 */
function startRequestSpan(sink: RequestSpanSink, unsampledRoot: UnsampledRoot | undefined, name: string, links: Link[]): Span | UnsampledRoot {
  if (unsampledRoot !== undefined) {
    const traceId = unsampledRoot.sampledTraceId();
    if (traceId === undefined) return unsampledRoot;
    return recordedSpan(sink, name, { traceId, spanId: sink.ids.generateSpanId(), traceFlags: TraceFlags.SAMPLED }, links, undefined);
  }
  const traceId = sink.ids.generateTraceId();
  const decision = sink.sampler.shouldSample(ROOT_CONTEXT, traceId, name, SpanKind.SERVER, NO_ATTRIBUTES, links);
  const spanId = sink.ids.generateSpanId();
  const traceFlags = decision.decision === RECORD_AND_SAMPLED ? TraceFlags.SAMPLED : TraceFlags.NONE;
  // Two literals rather than a spread of a conditional object, which allocated and copied one per request.
  const spanContext: SpanContext = decision.traceState ? { traceId, spanId, traceFlags, traceState: decision.traceState } : { traceId, spanId, traceFlags };
  if (decision.decision === NOT_RECORD) return trace.wrapSpanContext(spanContext);
  return recordedSpan(sink, name, spanContext, links, decision.attributes);
}

function recordedSpan(sink: RequestSpanSink, name: string, spanContext: SpanContext, links: Link[], attributes: Attributes | undefined): RequestSpan {
  const span = new RequestSpan(sink, name, spanContext, attributes);
  if (links !== NO_LINKS) span.addLinks(links);
  sink.processor.onStart(span as never, ROOT_CONTEXT);
  return span;
}

/**
 * The caller's span, from its W3C `traceparent`, as a link: never as the parent. Every client of this
 * public service is anonymous, and a parent's sampled flag decides its children's sampling: any
 * client sending `-01` had every request traced, whatever the sampling ratio, and could pile
 * requests into one forged trace (W3C Trace Context §7.2). So each request starts a trace of its
 * own, the "restart" of §3.4 for a service at a network's front gate, and the link keeps the
 * caller's ids where an operator can find them.
 */
function callerLinks(req: IncomingMessage): Link[] {
  if (req.headers.traceparent === undefined) return NO_LINKS;
  const caller = trace.getSpanContext(propagation.extract(ROOT_CONTEXT, req.headers));
  return caller !== undefined && trace.isSpanContextValid(caller) ? [{ context: caller }] : NO_LINKS;
}

/**
 * One SERVER span per request, the root of a trace, linked to the caller's W3C `traceparent` (callerLinks). Deliberately lean: the
 * fast path answers in tens of microseconds, and the generic HTTP instrumentation cost more than the
 * request itself (bench suite `overhead`). With the SDK's tracer registered, the span is a
 * RequestSpan that the SDK's sampler, processor and exporter still handle; with any other tracer it
 * is that tracer's. observeRequest, which every service calls first for every request, names the
 * span after the route template (`GET /api/reviews/since/:date`; raw URLs never go in a span) and
 * ends it with the response, on the listener it records the metrics from. A root request the sampler
 * drops gets no ids unless something reads them (UnsampledRoot).
 *
 * The span is not made the active context here: that costs a context and an async-context frame per
 * request, and a precomputed document starts no child span. Handlers that do (searches, express
 * routes, MCP, the hub) run inside inRequestSpan.
 */
export function traceRequests(handler: RequestHandler): RequestHandler {
  const tracer = trace.getTracer(TRACER_NAME);
  /** Looked up at the first request: the SDK registers its provider before a service serves. */
  let sink: RequestSpanSink | null | undefined;
  let unsampledRoot: UnsampledRoot | undefined;
  return (req: IncomingMessage, res: ServerResponse) => {
    const links = callerLinks(req);
    if (sink === undefined) {
      sink = requestSpanSink(registeredTracer());
      unsampledRoot = sink === null ? undefined : unsampledRootOf(sink);
    }
    const name = req.method ?? 'UNKNOWN';
    // A span the sampler dropped records nothing, but it is kept: child spans inherit the "not
    // sampled" decision instead of starting traces of their own.
    const span = sink === null ? tracer.startSpan(name, { kind: SpanKind.SERVER, links }, ROOT_CONTEXT) : startRequestSpan(sink, unsampledRoot, name, links);
    (res as Traced)[SPAN] = span;
    handler(req, res);
  };
}

/** The request's SERVER span, when tracing is on; a dropped root request's gets its ids here. */
export function requestSpan(res: ServerResponse): Span | undefined {
  const traced = res as Traced;
  const span = traced[SPAN];
  return span instanceof UnsampledRoot ? (traced[SPAN] = span.span()) : span;
}

/** The request's SERVER span if it records, without making the ids of one the sampler dropped. */
export function recordingRequestSpan(res: ServerResponse): Span | undefined {
  const span = (res as Traced)[SPAN];
  return span?.isRecording() ? (span as Span) : undefined;
}

/**
 * Runs `fn` with the request's SERVER span active, so the spans it starts (and the log lines it
 * writes) belong to the request's trace. Without tracing it is a plain call.
 */
export function inRequestSpan<T>(res: ServerResponse, fn: () => T): T {
  const span = requestSpan(res);
  return span === undefined ? fn() : context.with(trace.setSpan(ROOT_CONTEXT, span), fn);
}
