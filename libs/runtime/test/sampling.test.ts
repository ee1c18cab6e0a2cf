import { describe, expect, it, jest } from '@jest/globals';
import { diag, ROOT_CONTEXT, SpanKind, trace, TraceFlags, type Context, type SpanContext } from '@opentelemetry/api';
import { AlwaysOffSampler, AlwaysOnSampler, ParentBasedSampler, TraceIdRatioBasedSampler, type Sampler } from '@opentelemetry/sdk-trace-base';
import { rootUpperBoundOf, samplerFromEnv } from '../src/sampling.js';
import { PooledIdGenerator } from '../src/trace-ids.js';

const ids = new PooledIdGenerator();

function decide(sampler: Sampler, context: Context, traceId: string): number {
  return sampler.shouldSample(context, traceId, 'GET /reviews.json', SpanKind.SERVER, {}, []).decision;
}

function parent(traceFlags: TraceFlags, isRemote: boolean): Context {
  const spanContext: SpanContext = { traceId: ids.generateTraceId(), spanId: ids.generateSpanId(), traceFlags, isRemote };
  return trace.setSpanContext(ROOT_CONTEXT, spanContext);
}

/** What the SDK builds for each OTEL_TRACES_SAMPLER value (sdk-trace-base's buildSamplerFromEnv). */
const sdkSamplers: Record<string, (ratio: number) => Sampler> = {
  always_on: () => new AlwaysOnSampler(),
  always_off: () => new AlwaysOffSampler(),
  traceidratio: (ratio) => new TraceIdRatioBasedSampler(ratio),
  parentbased_always_on: () => new ParentBasedSampler({ root: new AlwaysOnSampler() }),
  parentbased_always_off: () => new ParentBasedSampler({ root: new AlwaysOffSampler() }),
  parentbased_traceidratio: (ratio) => new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) }),
};

describe('samplerFromEnv', () => {
  it.each(Object.keys(sdkSamplers))('decides as the SDK does for OTEL_TRACES_SAMPLER=%s, at the root and under every kind of parent', (name) => {
    for (const ratio of [0, 0.1, 0.5, 1]) {
      const ours = samplerFromEnv({ OTEL_TRACES_SAMPLER: name, OTEL_TRACES_SAMPLER_ARG: String(ratio) });
      const sdk = sdkSamplers[name]!(ratio);
      const contexts = [ROOT_CONTEXT, parent(TraceFlags.SAMPLED, true), parent(TraceFlags.NONE, true), parent(TraceFlags.SAMPLED, false), parent(TraceFlags.NONE, false)];
      const disagreements: string[] = [];
      for (const [index, context] of contexts.entries()) {
        for (let i = 0; i < 2_000; i++) {
          const traceId = ids.generateTraceId();
          if (decide(ours, context, traceId) !== decide(sdk, context, traceId)) disagreements.push(`ratio ${ratio}, context ${index}, trace ${traceId}`);
        }
      }
      expect(disagreements).toEqual([]);
      expect(ours.toString()).toBe(sdk.toString());
    }
  });

  it('keeps the ratio: about 10 % of random root traces at 0.1', () => {
    const sampler = samplerFromEnv({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.1' });
    let sampled = 0;
    for (let i = 0; i < 20_000; i++) if (decide(sampler, ROOT_CONTEXT, ids.generateTraceId()) === 2) sampled++;
    expect(sampled / 20_000).toBeGreaterThan(0.09);
    expect(sampled / 20_000).toBeLessThan(0.11);
  });

  it('decides as the SDK does when the id generator tells the words of the ids it made, and for ids it did not make', () => {
    const generator = new PooledIdGenerator();
    const elsewhere = new PooledIdGenerator();
    for (const ratio of [0, 0.1, 0.5, 1]) {
      const ours = samplerFromEnv({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: String(ratio) }, generator);
      const sdk = new TraceIdRatioBasedSampler(ratio);
      const disagreements: string[] = [];
      for (let i = 0; i < 5_000; i++) {
        const traceId = (i % 2 === 0 ? generator : elsewhere).generateTraceId();
        if (decide(ours, ROOT_CONTEXT, traceId) !== decide(sdk, ROOT_CONTEXT, traceId)) disagreements.push(`ratio ${ratio}, trace ${traceId}`);
      }
      for (const traceId of ['0'.repeat(32), 'a'.repeat(31), `${'a'.repeat(31)}g`, 'ABCDEF0123456789ABCDEF0123456789', '']) {
        if (decide(ours, ROOT_CONTEXT, traceId) !== decide(sdk, ROOT_CONTEXT, traceId)) disagreements.push(`ratio ${ratio}, invalid trace ${traceId}`);
      }
      expect(disagreements).toEqual([]);
    }
  });

  it.each(Object.keys(sdkSamplers))('tells its root decision as a bound on the words of the trace id, as the SDK decides for OTEL_TRACES_SAMPLER=%s', (name) => {
    for (const ratio of [0, 0.1, 0.5, 1]) {
      const bound = rootUpperBoundOf(samplerFromEnv({ OTEL_TRACES_SAMPLER: name, OTEL_TRACES_SAMPLER_ARG: String(ratio) }));
      expect(bound).toEqual(expect.any(Number));
      const sdk = sdkSamplers[name]!(ratio);
      const disagreements: string[] = [];
      // Words at and around the bound, and random ones.
      const words = [0, 1, bound! - 1, bound!, bound! + 1, 0xffffffff, ...Array.from({ length: 2_000 }, () => ids.randomWord())].filter((w) => w >= 0 && w < 2 ** 32);
      for (const word of words) {
        const traceId = ids.generateTraceIdWithXor(word);
        const sampled = decide(sdk, ROOT_CONTEXT, traceId) === 2;
        if (sampled !== word < bound!) disagreements.push(`ratio ${ratio}, word ${word}, trace ${traceId}`);
      }
      expect(disagreements).toEqual([]);
    }
  });

  it("tells no bound for a sampler that is not the runtime's", () => {
    expect(rootUpperBoundOf(new TraceIdRatioBasedSampler(0.1))).toBeUndefined();
    expect(rootUpperBoundOf(new ParentBasedSampler({ root: new AlwaysOnSampler() }))).toBeUndefined();
  });

  it('drops invalid trace ids as the SDK ratio sampler does: all zero, too short or long, not hex; upper case is hex', () => {
    const ours = samplerFromEnv({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '1' });
    const sdk = new TraceIdRatioBasedSampler(1);
    for (const traceId of ['0'.repeat(32), 'a'.repeat(31), 'a'.repeat(33), `${'a'.repeat(31)}g`, `${'a'.repeat(31)}-`, 'ABCDEF0123456789ABCDEF0123456789', '']) {
      expect([traceId, decide(ours, ROOT_CONTEXT, traceId)]).toEqual([traceId, decide(sdk, ROOT_CONTEXT, traceId)]);
    }
  });

  it('defaults as the SDK does: parentbased_always_on when unset, blank or unknown; ratio 1 when the argument is missing or out of range', () => {
    const errors = jest.spyOn(diag, 'error').mockImplementation(() => undefined);
    try {
      expect(samplerFromEnv({}).toString()).toBe(sdkSamplers.parentbased_always_on!(1).toString());
      expect(samplerFromEnv({ OTEL_TRACES_SAMPLER: '  ' }).toString()).toBe(sdkSamplers.parentbased_always_on!(1).toString());
      expect(errors).not.toHaveBeenCalled();
      expect(samplerFromEnv({ OTEL_TRACES_SAMPLER: 'jaeger_remote' }).toString()).toBe(sdkSamplers.parentbased_always_on!(1).toString());
      expect(errors).toHaveBeenLastCalledWith(expect.stringContaining('"jaeger_remote" invalid'));
      for (const arg of [undefined, '', 'ten percent', '-0.1', '1.5']) {
        const env = { OTEL_TRACES_SAMPLER: 'traceidratio', ...(arg === undefined ? {} : { OTEL_TRACES_SAMPLER_ARG: arg }) };
        expect(samplerFromEnv(env).toString()).toBe('TraceIdRatioBased{1}');
      }
      expect(errors).toHaveBeenCalledTimes(6);
      expect(samplerFromEnv({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: ' 0.25 ' }).toString()).toBe('TraceIdRatioBased{0.25}');
    } finally {
      errors.mockRestore();
    }
  });
});
