import { describe, it, expect } from '@jest/globals';
import { buildSnapshotFromInput, compressBody, gzipBody, keepUnchangedRepresentations, latestLastModifiedMs, representationHash, withLateBrotli, type Compress, type DatasetInput, type TopicName } from '@reviews/domain';
import { buildDataset } from './fixtures.js';

describe('keepUnchangedRepresentations', () => {
  const input = buildDataset({ reviews: 30, seed: 2 });
  /** Only insights.json differs from `input`'s documents. */
  const summarised: DatasetInput = { ...input, analysis: { ...input.analysis!, summary: 'Families praise the chapel.' } };
  const january = { baseUrl: 'https://reviews.example', publishedAt: new Date('2026-01-01T00:00:00Z') };
  const february = { ...january, publishedAt: new Date('2026-02-01T00:00:00Z') };
  const gzipOnly: Compress = (identity) => ({ gzip: gzipBody(identity), br: null });

  it('keeps each served representation whose bytes did not change, the same object, and takes the changed ones', () => {
    const served = buildSnapshotFromInput(input, january).representations;
    const next = buildSnapshotFromInput(summarised, february).representations;
    const kept = keepUnchangedRepresentations(next, served);
    for (const name of ['reviews', 'feedJson', 'feedAtom', 'openapi'] as const) expect(kept[name]).toBe(served[name]);
    expect(kept.insights).toBe(next.insights);
    expect(kept.insights.lastModified).toBe('Sun, 01 Feb 2026 00:00:00 GMT');
    expect(latestLastModifiedMs(kept)).toBe(Date.parse('2026-02-01T00:00:00Z'));
    expect(keepUnchangedRepresentations(next, null)).toBe(next);
  });

  it('keeps a served brotli variant through the late brotli of a version that deferred it', () => {
    const served = buildSnapshotFromInput(input, january);
    const deferred = buildSnapshotFromInput(summarised, { ...february, compress: gzipOnly });
    const representations = keepUnchangedRepresentations(deferred.representations, served.representations);
    const swapped = { ...deferred, representations, topic: (name: TopicName) => representations[name] };
    const late = new Map(Object.values(deferred.representations).map((r) => [representationHash(r), compressBody(r.identity.body).br!]));
    const completed = withLateBrotli(swapped, late);
    expect(completed.representations.reviews).toBe(served.representations.reviews);
    expect(completed.representations.insights.br).not.toBeNull();
    expect(completed.representations.insights.lastModified).toBe('Sun, 01 Feb 2026 00:00:00 GMT');
  });

  it('gives a kept representation without brotli (its late variants never came) the one the new build made', () => {
    const served = buildSnapshotFromInput(input, { ...january, compress: gzipOnly }).representations;
    const next = buildSnapshotFromInput(summarised, february).representations;
    const kept = keepUnchangedRepresentations(next, served);
    expect(kept.reviews.br).toBe(next.reviews.br);
    expect(kept.reviews.gzip).toBe(served.reviews.gzip);
    expect(kept.reviews.lastModified).toBe('Thu, 01 Jan 2026 00:00:00 GMT');
  });
});
