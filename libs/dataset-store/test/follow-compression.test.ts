import { describe, it, expect } from '@jest/globals';
import { compressBody, contentHash } from '@reviews/domain';
import { CompressionMemo } from '../src/follow-compression.js';

const body = (text: string) => Buffer.from(text.repeat(200), 'utf8');

describe('CompressionMemo', () => {
  it('gives the bytes compressing would, for a fresh body and for one kept from the previous build', () => {
    const memo = new CompressionMemo();
    const unchanged = body('{"openapi":"3.1.0"}');
    const expected = compressBody(unchanged);
    const first = memo.compress(unchanged, contentHash(unchanged));
    expect(first.gzip.equals(expected.gzip) && first.br.equals(expected.br)).toBe(true);
    // Each build gets its own copies (the worker transfers what it hands out): spoiling them spoils nothing kept.
    first.gzip.fill(0);
    first.br.fill(0);
    memo.endBuild();
    const second = memo.compress(unchanged, contentHash(unchanged));
    expect(second.gzip.equals(expected.gzip) && second.br.equals(expected.br)).toBe(true);
  });

  it('compresses a changed body afresh', () => {
    const memo = new CompressionMemo();
    const before = body('reply one ');
    memo.compress(before, contentHash(before));
    memo.endBuild();
    const after = body('reply two ');
    expect(memo.compress(after, contentHash(after)).br.equals(compressBody(after).br)).toBe(true);
  });
});
