import { describe, expect, it } from '@jest/globals';
import { isValidSpanId, isValidTraceId } from '@opentelemetry/api';
import { PooledIdGenerator } from '../src/trace-ids.js';

describe('PooledIdGenerator', () => {
  it('gives valid W3C ids that do not repeat across many refills of its pool', () => {
    const ids = new PooledIdGenerator();
    const traceIds = new Set<string>();
    const spanIds = new Set<string>();
    for (let i = 0; i < 5_000; i++) {
      const traceId = ids.generateTraceId();
      const spanId = ids.generateSpanId();
      expect(isValidTraceId(traceId)).toBe(true);
      expect(isValidSpanId(spanId)).toBe(true);
      traceIds.add(traceId);
      spanIds.add(spanId);
    }
    expect(traceIds.size).toBe(5_000);
    expect(spanIds.size).toBe(5_000);
  });

  it('uses every hex digit, lower-case only', () => {
    const ids = new PooledIdGenerator();
    const digits = new Set(Array.from({ length: 200 }, () => ids.generateTraceId()).join(''));
    expect([...digits].sort().join('')).toBe('0123456789abcdef');
  });
});
