import { describe, expect, it } from '@jest/globals';
import { isValidSpanId, isValidTraceId } from '@opentelemetry/api';
import { PooledIdGenerator } from '../src/trace-ids.js';

/** The XOR of a trace id's four 32-bit words, read from its digits. */
const xorOf = (id: string) => [0, 8, 16, 24].reduce((xor, at) => (xor ^ Number.parseInt(id.slice(at, at + 8), 16)) >>> 0, 0);

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

  it('spells each random byte as two independent digits: every pair of them about equally often', () => {
    const ids = new PooledIdGenerator();
    const counts = new Map<string, number>();
    const samples = 20_000;
    for (let i = 0; i < samples; i++) {
      const spanId = ids.generateSpanId();
      for (let at = 0; at < 16; at += 2) {
        const pair = spanId.slice(at, at + 2);
        counts.set(pair, (counts.get(pair) ?? 0) + 1);
      }
    }
    expect(counts.size).toBe(256);
    // Chi-square over the 256 pairs (255 degrees of freedom): ~255 when uniform, above 400 about once
    // in a hundred million runs; a digit spelled twice, or from the wrong half of its byte, reads thousands.
    const expected = (samples * 8) / 256;
    const chiSquare = [...counts.values()].reduce((sum, n) => sum + (n - expected) ** 2 / expected, 0);
    expect(chiSquare).toBeLessThan(400);
  });

  it('tells the XOR of the four 32-bit words of the last trace id it made, and of no other id', () => {
    const ids = new PooledIdGenerator();
    expect(ids.xorOfWords('')).toBeUndefined();
    let previous: string | undefined;
    // Across refills of the pool (128 trace and span id pairs each).
    for (let i = 0; i < 1_000; i++) {
      const traceId = ids.generateTraceId();
      ids.generateSpanId();
      expect([traceId, ids.xorOfWords(traceId)]).toEqual([traceId, xorOf(traceId)]);
      if (previous !== undefined) expect(ids.xorOfWords(previous)).toBeUndefined();
      previous = traceId;
    }
    expect(ids.xorOfWords('f'.repeat(32))).toBeUndefined();
  });

  it('makes valid, distinct trace ids whose words XOR to the word asked for, across refills', () => {
    const ids = new PooledIdGenerator();
    const made = new Set<string>();
    for (let i = 0; i < 2_000; i++) {
      const xor = [0, 1, 0x7fffffff, 0x80000000, 0xffffffff, ids.randomWord()][i % 6]!;
      const traceId = ids.generateTraceIdWithXor(xor);
      ids.generateSpanId();
      expect([traceId, isValidTraceId(traceId), xorOf(traceId)]).toEqual([traceId, true, xor]);
      made.add(traceId);
    }
    expect(made.size).toBe(2_000);
  });

  it('draws random words over the whole 32-bit range', () => {
    const ids = new PooledIdGenerator();
    const words = Array.from({ length: 20_000 }, () => ids.randomWord());
    expect(words.every((word) => Number.isInteger(word) && word >= 0 && word < 2 ** 32)).toBe(true);
    // Each bit is set in about half the words, the top one included.
    for (let bit = 0; bit < 32; bit++) {
      const set = words.filter((word) => Math.floor(word / 2 ** bit) % 2 === 1).length / words.length;
      expect([bit, set > 0.47 && set < 0.53]).toEqual([bit, true]);
    }
  });
});
