import type { IncomingMessage, ServerResponse } from 'node:http';
import { context, propagation, ROOT_CONTEXT, SpanKind, trace, type Span } from '@opentelemetry/api';
import type { RequestHandler } from './server.js';

const TRACER_NAME = 'public-reviews';
const SPAN = Symbol('serverSpan');

interface Traced extends ServerResponse {
  [SPAN]: Span;
}

/** Shared `close` listener (no closure per request): a response closes exactly once, finished or aborted. */
function endSpan(this: Traced): void {
  const span = this[SPAN];
  span.setAttribute('http.response.status_code', this.statusCode);
  span.end();
}

/**
 * One SERVER span per request, parented by the caller's W3C `traceparent`, active while the service
 * handles it. Deliberately lean: the fast path answers in tens of microseconds, and the generic HTTP
 * instrumentation cost more than the request itself (bench suite `overhead`). observeRequest names
 * the span after the route template (`GET /api/reviews/since/:date`); raw URLs never go in a span.
 */
export function traceRequests(handler: RequestHandler): RequestHandler {
  const tracer = trace.getTracer(TRACER_NAME);
  return (req: IncomingMessage, res: ServerResponse) => {
    const parent = req.headers.traceparent === undefined ? ROOT_CONTEXT : propagation.extract(ROOT_CONTEXT, req.headers);
    const method = req.method ?? 'UNKNOWN';
    const span = tracer.startSpan(method, { kind: SpanKind.SERVER }, parent);
    // A span the sampler dropped records nothing: skip its attributes and end listener, but keep it
    // active so child spans inherit the "not sampled" decision instead of starting traces of their own.
    if (span.isRecording()) {
      span.setAttribute('http.request.method', method);
      (res as Traced)[SPAN] = span;
      res.on('close', endSpan);
    }
    context.with(trace.setSpan(parent, span), handler, undefined, req, res);
  };
}
