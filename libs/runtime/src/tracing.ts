import { context, propagation, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span } from '@opentelemetry/api';

export { SpanKind };

/** The one tracer the runtime's spans come from, request spans included. */
export const TRACER_NAME = 'public-reviews';

/**
 * Tracing is on only when an exporter is configured through the standard OTEL_* variables; otherwise
 * no SDK is loaded and every call below goes to the API's no-op tracer, so "off" costs nothing.
 */
export function tracingEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.OTEL_SDK_DISABLED === 'true') return false;
  const exporter = env.OTEL_TRACES_EXPORTER;
  if (exporter !== undefined && exporter !== '') return exporter !== 'none';
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

export interface SpanOptions {
  readonly kind?: SpanKind;
  readonly attributes?: Attributes;
  /** Parent from elsewhere (a NATS header); defaults to the active context. */
  readonly parent?: Context;
}

function startSpan(name: string, options: SpanOptions): { span: Span; parent: Context } {
  const parent = options.parent ?? context.active();
  const span = trace.getTracer(TRACER_NAME).startSpan(name, { kind: options.kind ?? SpanKind.INTERNAL, ...(options.attributes ? { attributes: options.attributes } : {}) }, parent);
  return { span, parent };
}

function recordFailure(span: Span, error: unknown): void {
  span.recordException(error as Error);
  span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
}

/** Run `fn` inside a span that records exceptions and ends when `fn` settles. */
export async function withSpan<T>(name: string, options: SpanOptions, fn: (span: Span) => Promise<T> | T): Promise<T> {
  const { span, parent } = startSpan(name, options);
  try {
    return await context.with(trace.setSpan(parent, span), () => fn(span));
  } catch (error) {
    recordFailure(span, error);
    throw error;
  } finally {
    span.end();
  }
}

/**
 * The synchronous twin of withSpan, for work on a request's hot path (searches, tool calls, snapshot
 * builds). With tracing off the span does not record, so no context is built around `fn`.
 */
export function withSyncSpan<T>(name: string, options: SpanOptions, fn: (span: Span) => T): T {
  const { span, parent } = startSpan(name, options);
  try {
    return span.isRecording() ? context.with(trace.setSpan(parent, span), fn, undefined, span) : fn(span);
  } catch (error) {
    recordFailure(span, error);
    throw error;
  } finally {
    span.end();
  }
}

/** The W3C traceparent of the active span, for NATS message headers; null when tracing is off. */
export function activeTraceparent(): string | null {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent ?? null;
}

/** A context whose parent is the given W3C traceparent (from a NATS header or a published dataset). */
export function contextFromTraceparent(traceparent: string | null | undefined): Context {
  if (!traceparent) return context.active();
  return propagation.extract(context.active(), { traceparent });
}

/** Ids for log lines, so logs and traces join up. */
export function activeTraceIds(): { trace_id: string; span_id: string } | null {
  const span = trace.getSpan(context.active());
  const ctx = span?.spanContext();
  if (!ctx || !trace.isSpanContextValid(ctx)) return null;
  return { trace_id: ctx.traceId, span_id: ctx.spanId };
}
