import type { IncomingMessage, ServerResponse } from 'node:http';
import { context, propagation, ROOT_CONTEXT, SpanKind, trace, type Context, type Span } from '@opentelemetry/api';
import type { RequestHandler } from './server.js';

const TRACER_NAME = 'public-reviews';
const SPAN = Symbol('serverSpan');
const PARENT = Symbol('serverSpanParent');

interface Traced extends ServerResponse {
  [SPAN]?: Span;
  [PARENT]?: Context;
}

/**
 * One SERVER span per request, parented by the caller's W3C `traceparent`. Deliberately lean: the
 * fast path answers in tens of microseconds, and the generic HTTP instrumentation cost more than the
 * request itself (bench suite `overhead`). observeRequest, which every service calls first for every
 * request, names the span after the route template (`GET /api/reviews/since/:date`; raw URLs never go
 * in a span) and ends it with the response, on the listener it records the metrics from.
 *
 * The span is not made the active context here: that costs a context and an async-context frame per
 * request, and a precomputed document starts no child span. Handlers that do (searches, express
 * routes, MCP, the hub) run inside inRequestSpan.
 */
export function traceRequests(handler: RequestHandler): RequestHandler {
  const tracer = trace.getTracer(TRACER_NAME);
  return (req: IncomingMessage, res: ServerResponse) => {
    const parent = req.headers.traceparent === undefined ? ROOT_CONTEXT : propagation.extract(ROOT_CONTEXT, req.headers);
    // A span the sampler dropped records nothing, but it is kept: child spans inherit the "not
    // sampled" decision instead of starting traces of their own.
    const span = tracer.startSpan(req.method ?? 'UNKNOWN', { kind: SpanKind.SERVER }, parent);
    const traced = res as Traced;
    traced[SPAN] = span;
    traced[PARENT] = parent;
    handler(req, res);
  };
}

/** The request's SERVER span, when tracing is on. */
export function requestSpan(res: ServerResponse): Span | undefined {
  return (res as Traced)[SPAN];
}

/**
 * Runs `fn` with the request's SERVER span active, so the spans it starts (and the log lines it
 * writes) belong to the request's trace. Without tracing it is a plain call.
 */
export function inRequestSpan<T>(res: ServerResponse, fn: () => T): T {
  const { [SPAN]: span, [PARENT]: parent } = res as Traced;
  return span === undefined ? fn() : context.with(trace.setSpan(parent!, span), fn);
}
