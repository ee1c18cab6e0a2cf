import { readFileSync } from 'node:fs';
import { describe, it, expect } from '@jest/globals';
import { compressBody, contentHash } from '@reviews/domain';
import type { ContentOutcome } from '../src/follow-build.js';
import { CompressionMemo } from '../src/follow-compression.js';
import { createContentBuilder } from '../src/follow-offthread.js';

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

describe('a kept build worker', () => {
  const sample = JSON.parse(readFileSync(new URL('../../../data/sample-dataset.json', import.meta.url), 'utf8')) as { reviews: { owner_reply: { text: string } | null }[] };
  /** The sample with one owner reply edited: reviews.json and the feeds change, OpenAPI and insights do not. */
  const edited = (note: string): Uint8Array => {
    const copy = structuredClone(sample);
    const replied = copy.reviews.find((review) => review.owner_reply !== null);
    if (!replied?.owner_reply) throw new Error('the sample has no owner reply');
    replied.owner_reply.text += note;
    return Buffer.from(JSON.stringify(copy));
  };
  const bodies = (outcome: ContentOutcome) => {
    if (!outcome.ok) throw new Error(outcome.rejection.summary);
    return Object.values(outcome.content.representations).flatMap((r) => [r.identity, r.gzip, r.br]).map((v) => v && `${v.etag} ${contentHash(v.body)}`);
  };

  it('builds the bytes a fresh worker builds, whatever it built before', async () => {
    const request = (bytes: Uint8Array) => ({ bytes, baseUrl: 'https://reviews.example', publishedAt: new Date('2026-01-01T00:00:00Z') });
    const kept = createContentBuilder();
    const fresh = createContentBuilder();
    try {
      await kept.build(request(edited(' (one)')));
      const [afterAnother, alone] = [await kept.build(request(edited(' (two)'))), await fresh.build(request(edited(' (two)')))];
      expect(bodies(afterAnother)).toEqual(bodies(alone));
    } finally {
      await Promise.all([kept.close(), fresh.close()]);
    }
  });
});
