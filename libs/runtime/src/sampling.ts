import { diag, ROOT_CONTEXT, trace, TraceFlags, type Attributes, type Context, type Link, type SpanContext, type SpanKind } from '@opentelemetry/api';
import type { Sampler, SamplingResult } from '@opentelemetry/sdk-trace-base';
import { hexValue } from './http/request-target.js';

/** sdk-trace's SamplingDecision values: importing the enum would load the SDK into untraced servers. */
export const NOT_RECORD = 0;
export const RECORD_AND_SAMPLED = 2;
const SAMPLED: SamplingResult = Object.freeze({ decision: RECORD_AND_SAMPLED });
const DROPPED: SamplingResult = Object.freeze({ decision: NOT_RECORD });

/** The values of OTEL_TRACES_SAMPLER the JavaScript SDK implements, and its default. */
const SAMPLERS = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'] as const;
const DEFAULT_SAMPLER = 'parentbased_always_on';
const DEFAULT_RATIO = 1;

/**
 * A sampler's decision for a span without a valid parent, as one number: such a span is sampled when
 * the XOR of its trace id's four 32-bit words is below it (0: never, 2³²: always). The request path
 * decides a root request with it before any id exists, and makes the ids of one it drops only if
 * something reads them (http/trace-requests.ts).
 */
export interface RootUpperBound {
  readonly rootUpperBound: number;
}

/** The root upper bound of the samplers samplerFromEnv makes; undefined for any other sampler. */
export function rootUpperBoundOf(sampler: Sampler): number | undefined {
  const bound = (sampler as Partial<RootUpperBound>).rootUpperBound;
  return typeof bound === 'number' ? bound : undefined;
}

/** 2³², the bound that samples every root span: every 32-bit word is below it. */
export const ALL_WORDS = 0x100000000;

class AlwaysOn implements Sampler, RootUpperBound {
  readonly rootUpperBound = ALL_WORDS;

  shouldSample(): SamplingResult {
    return SAMPLED;
  }

  toString(): string {
    return 'AlwaysOnSampler';
  }
}

class AlwaysOff implements Sampler, RootUpperBound {
  readonly rootUpperBound = 0;

  shouldSample(): SamplingResult {
    return DROPPED;
  }

  toString(): string {
    return 'AlwaysOffSampler';
  }
}

/** Where trace ids come from, when it can tell the ratio sampler an id's words without it reading them. */
export interface TraceIdWords {
  /** The XOR of the id's four 32-bit words if this source made it and it is valid, else undefined. */
  xorOfWords(traceId: string): number | undefined;
}

/** The XOR of a trace id's four 32-bit words; undefined unless it is 32 hex digits, not all zero (W3C). */
function xorOfWords(traceId: string): number | undefined {
  if (traceId.length !== 32) return undefined;
  let accumulation = 0;
  let zero = true;
  for (let i = 0; i < 32; i += 8) {
    let word = 0;
    for (let j = i; j < i + 8; j++) {
      // Upper- and lower-case hex digits; anything else makes the id invalid.
      const digit = hexValue(traceId.charCodeAt(j));
      if (digit < 0) return undefined;
      word = (word << 4) | digit;
    }
    if (word !== 0) zero = false;
    accumulation = (accumulation ^ word) >>> 0;
  }
  return zero ? undefined : accumulation;
}

/**
 * The SDK's TraceIdRatioBased arithmetic, to the bit (a test compares the two over many ids): the
 * trace id's four 32-bit words XORed, below ratio × 2³² - 1. Services running the SDK's own sampler
 * at the same ratio therefore keep or drop the same traces. The SDK drops invalid ids; so does this.
 */
class TraceIdRatio implements Sampler, RootUpperBound {
  readonly rootUpperBound: number;

  constructor(
    private readonly ratio: number,
    private readonly ids: TraceIdWords | undefined,
  ) {
    this.rootUpperBound = ratio === 1 ? ALL_WORDS : Math.floor(ratio * 0xffffffff);
  }

  shouldSample(_context: Context, traceId: string): SamplingResult {
    const accumulation = this.ids?.xorOfWords(traceId) ?? xorOfWords(traceId);
    return accumulation !== undefined && accumulation < this.rootUpperBound ? SAMPLED : DROPPED;
  }

  toString(): string {
    return `TraceIdRatioBased{${this.ratio}}`;
  }
}

/**
 * The span context `context` carries when it is valid: the parent of a span started in it. The root
 * context, which every request starts from (a caller's traceparent is only linked), carries none.
 */
export function validParentOf(context: Context): SpanContext | undefined {
  if (context === ROOT_CONTEXT) return undefined;
  const parent = trace.getSpanContext(context);
  return parent !== undefined && trace.isSpanContextValid(parent) ? parent : undefined;
}

/** W3C ParentBased with the SDK's defaults: follow a valid parent's sampled flag, else ask `root`. */
class ParentBased implements Sampler, RootUpperBound {
  readonly rootUpperBound: number;

  constructor(private readonly root: Sampler & RootUpperBound) {
    this.rootUpperBound = root.rootUpperBound;
  }

  shouldSample(context: Context, traceId: string, spanName: string, spanKind: SpanKind, attributes: Attributes, links: Link[]): SamplingResult {
    const parent = validParentOf(context);
    if (parent === undefined) return this.root.shouldSample(context, traceId, spanName, spanKind, attributes, links);
    return (parent.traceFlags & TraceFlags.SAMPLED) === TraceFlags.SAMPLED ? SAMPLED : DROPPED;
  }

  toString(): string {
    return `ParentBased{root=${this.root.toString()}, remoteParentSampled=AlwaysOnSampler, remoteParentNotSampled=AlwaysOffSampler, localParentSampled=AlwaysOnSampler, localParentNotSampled=AlwaysOffSampler}`;
  }
}

/** Unset, blank or whitespace reads as unset, as the SDK's environment helpers read it. */
function fromEnv(env: NodeJS.ProcessEnv, key: string): string | undefined {
  const raw = env[key];
  return raw === undefined || raw.trim() === '' ? undefined : raw;
}

function ratioFrom(env: NodeJS.ProcessEnv): number {
  const raw = fromEnv(env, 'OTEL_TRACES_SAMPLER_ARG');
  const ratio = raw === undefined ? Number.NaN : Number(raw);
  if (Number.isNaN(ratio) || ratio < 0 || ratio > 1) {
    diag.error(`OTEL_TRACES_SAMPLER_ARG=${raw ?? ''} is not a ratio in [0..1], defaulting to ${DEFAULT_RATIO}.`);
    return DEFAULT_RATIO;
  }
  return ratio;
}

/**
 * The sampler OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG name, read as the SDK reads them
 * (same values, defaults and fallbacks) and handed to NodeSDK in their place. Its decisions are the
 * SDK samplers' decisions; it is ours because every request asks it: the SDK's reach each API helper
 * through compiled-CommonJS getters and match ids with a regular expression, and measured beside a
 * decision made inline, its ratio sampler cost the fast path ~3 points (ADR 0009). `ids`, the id
 * generator given to the SDK beside it, spares the ratio sampler reading the ids it made.
 */
export function samplerFromEnv(env: NodeJS.ProcessEnv = process.env, ids?: TraceIdWords): Sampler {
  const name = fromEnv(env, 'OTEL_TRACES_SAMPLER') ?? DEFAULT_SAMPLER;
  if (!(SAMPLERS as readonly string[]).includes(name)) {
    diag.error(`OTEL_TRACES_SAMPLER value "${name}" invalid, defaulting to "${DEFAULT_SAMPLER}".`);
    return new ParentBased(new AlwaysOn());
  }
  const root = name.endsWith('always_on') ? new AlwaysOn() : name.endsWith('always_off') ? new AlwaysOff() : new TraceIdRatio(ratioFrom(env), ids);
  return name.startsWith('parentbased_') ? new ParentBased(root) : root;
}
