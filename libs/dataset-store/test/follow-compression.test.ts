import { readFileSync } from 'node:fs';
import { describe, it, expect } from '@jest/globals';
import { assembleSnapshot, compressBody, contentHash, withLateBrotli } from '@reviews/domain';
import type { ContentOutcome } from '../src/follow-build.js';
import { CompressionMemo } from '../src/follow-compression.js';
import { createContentBuilder, type ContentBuilder } from '../src/follow-offthread.js';

const body = (text: string) => Buffer.from(text.repeat(200), 'utf8');

describe('CompressionMemo', () => {
  it('gives the bytes compressing would, for a fresh body and for one kept from the previous build', () => {
    const memo = new CompressionMemo();
    const unchanged = body('{"openapi":"3.1.0"}');
    const expected = compressBody(unchanged);
    const first = memo.compressor(false)(unchanged, contentHash(unchanged));
    expect(first.gzip.equals(expected.gzip) && first.br!.equals(expected.br!)).toBe(true);
    // Each build gets its own copies (the worker transfers what it hands out): spoiling them spoils nothing kept.
    first.gzip.fill(0);
    first.br!.fill(0);
    memo.endBuild();
    const second = memo.compressor(false)(unchanged, contentHash(unchanged));
    expect(second.gzip.equals(expected.gzip) && second.br!.equals(expected.br!)).toBe(true);
  });

  it('compresses a changed body afresh', () => {
    const memo = new CompressionMemo();
    const before = body('reply one ');
    memo.compressor(false)(before, contentHash(before));
    memo.endBuild();
    const after = body('reply two ');
    expect(memo.compressor(false)(after, contentHash(after)).br!.equals(compressBody(after).br!)).toBe(true);
  });

  it('deferring, gives a new body gzip only and its brotli later, and a kept body both at once', () => {
    const memo = new CompressionMemo();
    const kept = body('{"openapi":"3.1.0"}');
    memo.compressor(false)(kept, contentHash(kept));
    memo.endBuild();
    const changed = body('reply two ');
    const compress = memo.compressor(true);
    const now = compress(changed, contentHash(changed));
    expect(now.br).toBeNull();
    expect(now.gzip.equals(compressBody(changed).gzip)).toBe(true);
    expect(compress(kept, contentHash(kept)).br!.equals(compressBody(kept).br!)).toBe(true);
    const late = memo.compressDeferred();
    expect([...late.keys()]).toEqual([contentHash(changed)]);
    expect(Buffer.from(late.get(contentHash(changed))!).equals(compressBody(changed).br!)).toBe(true);
    // Made once: the next build finds it.
    memo.endBuild();
    expect(memo.compressor(true)(changed, contentHash(changed)).br!.equals(compressBody(changed).br!)).toBe(true);
    expect(memo.compressDeferred().size).toBe(0);
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

  const request = (bytes: Uint8Array, deferBrotli = false) => ({ bytes, baseUrl: 'https://reviews.example', publishedAt: new Date('2026-01-01T00:00:00Z'), lastModified: { at: new Date('2026-01-01T00:00:00Z'), shared: false }, deferBrotli });

  /** A worker kept across builds and a fresh one to compare it with, both closed afterwards. */
  const withKeptAndFresh = async (compare: (kept: ContentBuilder, fresh: ContentBuilder) => Promise<void>) => {
    const kept = createContentBuilder();
    const fresh = createContentBuilder();
    try {
      await compare(kept, fresh);
    } finally {
      await Promise.all([kept.close(), fresh.close()]);
    }
  };

  it('builds the bytes a fresh worker builds, whatever it built before', () =>
    withKeptAndFresh(async (kept, fresh) => {
      await kept.build(request(edited(' (one)')));
      const [afterAnother, alone] = [await kept.build(request(edited(' (two)'))), await fresh.build(request(edited(' (two)')))];
      expect(bodies(afterAnother)).toEqual(bodies(alone));
    }));

  it('deferring brotli, sends the rest of the bytes a full build makes after the content', () =>
    withKeptAndFresh(async (kept, fresh) => {
      await kept.build(request(edited(' (one)')));
      const deferred = await kept.build(request(edited(' (two)'), true));
      const alone = await fresh.build(request(edited(' (two)')));
      if (!deferred.ok || !deferred.lateBrotli) throw new Error('expected a deferred build');
      const late = await deferred.lateBrotli;
      const snapshot = withLateBrotli(assembleSnapshot(deferred.content), late!);
      expect(bodies({ ok: true, content: { ...deferred.content, representations: snapshot.representations } })).toEqual(bodies(alone));
      // The next build waits for the late bodies and finds them kept.
      expect(bodies(await kept.build(request(edited(' (two)'))))).toEqual(bodies(alone));
    }));

  it('given the version being served, builds the content a fresh worker builds and shares the unchanged reviews with it', () =>
    withKeptAndFresh(async (kept, fresh) => {
      const served = await kept.build(request(edited(' (one)')));
      if (!served.ok) throw new Error(served.rejection.summary);
      const [next, alone] = [await kept.build(request(edited(' (two)')), served.content), await fresh.build(request(edited(' (two)')))];
      if (!next.ok || !alone.ok) throw new Error('a build was refused');
      const { representations: _bodies, ...nextData } = next.content;
      const { representations: _aloneBodies, ...aloneData } = alone.content;
      expect(nextData).toEqual(aloneData);
      const sharedReviews = next.content.input.reviews.filter((review, i) => review === served.content.input.reviews[i]);
      expect(sharedReviews.length).toBeGreaterThan(0);
      expect(sharedReviews.length).toBeLessThan(next.content.input.reviews.length);
    }));
});
