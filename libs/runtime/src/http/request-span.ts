import { performance } from 'node:perf_hooks';
import { SpanKind, SpanStatusCode, type Attributes, type AttributeValue, type Exception, type HrTime, type Link, type Span, type SpanContext, type SpanStatus, type TimeInput } from '@opentelemetry/api';
import type { IdGenerator, ReadableSpan, Sampler, SpanProcessor, TimedEvent } from '@opentelemetry/sdk-trace-base';

/**
 * What a request span needs from the tracer the SDK configured: its sampler, id generator, span
 * processor (the batch processor and exporter the OTEL_* variables chose), resource and scope.
 */
export interface RequestSpanSink {
  readonly sampler: Sampler;
  readonly ids: IdGenerator;
  readonly processor: SpanProcessor;
  readonly resource: ReadableSpan['resource'];
  readonly scope: ReadableSpan['instrumentationScope'];
}

/** The SDK's `Tracer` (sdk-trace 2.x) keeps these as fields; they are not part of its public API. */
interface SdkTracerFields {
  readonly _sampler?: Sampler;
  readonly _idGenerator?: IdGenerator;
  readonly _spanProcessor?: SpanProcessor;
  readonly _resource?: ReadableSpan['resource'];
  readonly instrumentationScope?: ReadableSpan['instrumentationScope'];
}

/**
 * The sink behind an SDK tracer, or null for any other tracer (the API's no-op one, or an SDK whose
 * fields moved): callers then start spans through the tracer, as before. A test checks that the
 * installed SDK yields a sink, so an upgrade that moves these fields fails CI instead of silently
 * costing the fast path again.
 */
export function requestSpanSink(tracer: unknown): RequestSpanSink | null {
  const { _sampler: sampler, _idGenerator: ids, _spanProcessor: processor, _resource: resource, instrumentationScope: scope } = (tracer ?? {}) as SdkTracerFields;
  if (!sampler || !ids || !processor || !resource || !scope) return null;
  return { sampler, ids, processor, resource, scope };
}

/** Shared until a span sets a status or adds a link or event: most request spans never do. */
const UNSET: SpanStatus = Object.freeze({ code: SpanStatusCode.UNSET });
export const NO_LINKS: Link[] = Object.freeze([]) as unknown as Link[];
const NO_EVENTS: TimedEvent[] = Object.freeze([]) as unknown as TimedEvent[];

// The SDK's time helpers live in @opentelemetry/core, which untraced servers do not load.
const NANOS_PER_MILLI = 1e6;

function hrTimeOf(epochMillis: number): HrTime {
  const seconds = Math.floor(epochMillis / 1000);
  return [seconds, Math.round((epochMillis - seconds * 1000) * NANOS_PER_MILLI)];
}

function epochMillisOf(time: TimeInput): number {
  if (typeof time === 'number') return time < performance.timeOrigin ? performance.timeOrigin + time : time;
  if (time instanceof Date) return time.getTime();
  return time[0] * 1000 + time[1] / NANOS_PER_MILLI;
}

/**
 * A request's SERVER span, recorded as a plain object and handed to the SDK's span processor when it
 * ends. The SDK's own span costs several times more on a path that answers in tens of microseconds
 * (ADR 0009, fifth-session addendum); the SDK still samples, batches and exports it. It carries what
 * the runtime puts on a request span (name, a few attributes, status, events for exceptions) without
 * the SDK's span limits, which only matter for attributes set by other code.
 */
export class RequestSpan implements Span, ReadableSpan {
  // Only what varies per request is a field: the fast path allocates and writes every field, and
  // the times are worked out when an exporter reads them, which a span dropped from a full queue
  // never is.
  attributes: Attributes;
  status: SpanStatus = UNSET;
  links: Link[] = NO_LINKS;
  events: TimedEvent[] = NO_EVENTS;
  ended = false;
  /** A request span is the root of its trace (trace-requests.ts, callerLinks). */
  declare readonly parentSpanContext?: SpanContext;
  readonly #startedAt = performance.now();
  /** Milliseconds from start to end; NaN until the span ends. */
  #elapsed = Number.NaN;

  constructor(
    private readonly sink: RequestSpanSink,
    public name: string,
    private readonly context: SpanContext,
    attributes: Attributes | undefined,
  ) {
    this.attributes = { ...attributes };
  }

  get kind(): SpanKind {
    return SpanKind.SERVER;
  }

  get droppedAttributesCount(): number {
    return 0;
  }

  get droppedEventsCount(): number {
    return 0;
  }

  get droppedLinksCount(): number {
    return 0;
  }

  get resource(): ReadableSpan['resource'] {
    return this.sink.resource;
  }

  get instrumentationScope(): ReadableSpan['instrumentationScope'] {
    return this.sink.scope;
  }

  get startTime(): HrTime {
    return hrTimeOf(performance.timeOrigin + this.#startedAt);
  }

  get endTime(): HrTime {
    return Number.isNaN(this.#elapsed) ? [0, 0] : hrTimeOf(performance.timeOrigin + this.#startedAt + this.#elapsed);
  }

  get duration(): HrTime {
    return Number.isNaN(this.#elapsed) ? [0, 0] : hrTimeOf(this.#elapsed);
  }

  spanContext(): SpanContext {
    return this.context;
  }

  isRecording(): boolean {
    return !this.ended;
  }

  setAttribute(key: string, value: AttributeValue | undefined): this {
    if (!this.ended && value !== undefined) this.attributes[key] = value;
    return this;
  }

  setAttributes(attributes: Attributes): this {
    for (const [key, value] of Object.entries(attributes)) this.setAttribute(key, value);
    return this;
  }

  addEvent(name: string, attributesOrTime?: Attributes | TimeInput, time?: TimeInput): this {
    if (this.ended) return this;
    if (this.events === NO_EVENTS) this.events = [];
    // As the SDK reads it: a time in second place stands for the time, with no attributes.
    const timeSecond = typeof attributesOrTime === 'number' || Array.isArray(attributesOrTime) || attributesOrTime instanceof Date;
    const attributes = timeSecond || attributesOrTime === undefined ? {} : (attributesOrTime as Attributes);
    const at = timeSecond ? (attributesOrTime as TimeInput) : time;
    this.events.push({ name, attributes, time: hrTimeOf(at === undefined ? performance.timeOrigin + performance.now() : epochMillisOf(at)), droppedAttributesCount: 0 });
    return this;
  }

  addLink(link: Link): this {
    if (this.ended) return this;
    if (this.links === NO_LINKS) this.links = [];
    this.links.push(link);
    return this;
  }

  addLinks(links: Link[]): this {
    for (const link of links) this.addLink(link);
    return this;
  }

  setStatus(status: SpanStatus): this {
    if (!this.ended && this.status.code !== SpanStatusCode.OK) this.status = { ...status };
    return this;
  }

  updateName(name: string): this {
    if (!this.ended) this.name = name;
    return this;
  }

  recordException(exception: Exception, time?: TimeInput): void {
    const attributes: Attributes =
      typeof exception === 'string'
        ? { 'exception.message': exception }
        : { 'exception.type': exception.name ?? String(exception.code ?? ''), 'exception.message': exception.message ?? '', 'exception.stacktrace': exception.stack ?? '' };
    this.addEvent('exception', attributes, time);
  }

  /**
   * Milliseconds from the start to `time`, or to now. A performance.now() reading, as the API allows
   * and observeRequest passes, stays on that clock: no detour through the epoch, which rounds.
   */
  #millisSinceStart(time: TimeInput | undefined): number {
    if (time === undefined) return performance.now() - this.#startedAt;
    if (typeof time === 'number' && time < performance.timeOrigin) return time - this.#startedAt;
    return epochMillisOf(time) - (performance.timeOrigin + this.#startedAt);
  }

  end(endTime?: TimeInput): void {
    if (this.ended) return;
    // As the SDK does: an end before the start ends the span at its start.
    this.#elapsed = Math.max(0, this.#millisSinceStart(endTime));
    // The SDK's processors type their argument as its own span class; they only read ReadableSpan.
    this.sink.processor.onEnding?.(this as never);
    this.ended = true;
    this.sink.processor.onEnd(this);
  }
}
