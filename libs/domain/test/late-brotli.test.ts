import { describe, it, expect } from '@jest/globals';
import { buildSnapshotFromInput, compressBody, gzipBody, representationHash, withLateBrotli, type Compress } from '@reviews/domain';
import { buildDataset } from './fixtures.js';

describe('withLateBrotli', () => {
  const input = buildDataset({ reviews: 30, seed: 2 });
  const options = { baseUrl: 'https://reviews.example', publishedAt: new Date('2026-01-01T00:00:00Z') };
  const gzipOnly: Compress = (identity) => ({ gzip: gzipBody(identity), br: null });

  it('completes a snapshot built without brotli into the full build, byte for byte and ETag for ETag', () => {
    const full = buildSnapshotFromInput(input, options);
    const partial = buildSnapshotFromInput(input, { ...options, compress: gzipOnly });
    expect(Object.values(partial.representations).every((r) => r.br === null)).toBe(true);
    const late = new Map(Object.values(partial.representations).map((r) => [representationHash(r), compressBody(r.identity.body).br!]));
    const completed = withLateBrotli(partial, late);
    expect(completed.version).toBe(partial.version);
    expect(completed.search).toBe(partial.search);
    for (const name of ['reviews', 'insights', 'feedJson', 'feedAtom', 'openapi'] as const) {
      const [a, b] = [completed.representations[name], full.representations[name]];
      expect([a.br!.etag, a.gzip!.etag, a.identity.etag]).toEqual([b.br!.etag, b.gzip!.etag, b.identity.etag]);
      expect(a.br!.body.equals(b.br!.body)).toBe(true);
    }
    expect(completed.topic('feedAtom')).toBe(completed.representations.feedAtom);
  });

  it('leaves a representation alone when no late body is its own', () => {
    const partial = buildSnapshotFromInput(input, { ...options, compress: gzipOnly });
    const completed = withLateBrotli(partial, new Map([['not-a-hash', Buffer.from('x')]]));
    expect(completed.representations.reviews).toBe(partial.representations.reviews);
  });
});
