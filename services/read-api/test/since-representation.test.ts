import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { contentHash, type DatasetInput } from '@reviews/domain';
import { createSinceRepresentation } from '@reviews/read-api/since-representation';
import { close, listen, rawRequest, snapshotOf, startTestApi, type TestApi } from './helpers.js';
import { buildDataset } from '../../../libs/domain/test/fixtures.js';

const sample = JSON.parse(readFileSync(new URL('../../../data/sample-dataset.json', import.meta.url), 'utf8')) as DatasetInput;

/** Every day a review is dated, a day before all and one after all, and days between reviews. */
function datesAround(input: DatasetInput): string[] {
  const days = [...new Set(input.reviews.map((review) => review.date))].sort();
  const dayAfter = (day: string) => new Date(Date.parse(`${day}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
  return ['1900-01-01', ...days, ...days.map(dayAfter), '2999-12-31'];
}

describe('createSinceRepresentation', () => {
  it.each([
    ['the bundled sample', sample],
    ['a generated dataset', buildDataset({ reviews: 300, seed: 4 })],
  ])('cuts from %s bytes equal to the serialized result, for every date', (_label, input) => {
    const snapshot = snapshotOf(input);
    for (const date of datesAround(input)) {
      const representation = createSinceRepresentation(snapshot, date);
      const result = snapshot.search.since(date);
      expect({ date, equal: representation.identity.body.equals(Buffer.from(JSON.stringify(result))) }).toEqual({ date, equal: true });
      // Cut, not serialized again: the ETag is derived, never the hash of the whole body.
      expect(representation.identity.etag).toBe(`"${contentHash(`since\n${snapshot.representations.reviews.identity.etag}\n${date}\n${result.matched}`).slice(0, 32)}"`);
    }
  });

  it('has one ETag per date and result, the same on every build from the same reviews.json', () => {
    const snapshot = snapshotOf(buildDataset({ reviews: 300, seed: 4 }));
    const again = snapshotOf(buildDataset({ reviews: 300, seed: 4 }));
    const other = snapshotOf(buildDataset({ reviews: 300, seed: 5 }));
    const etag = (s: typeof snapshot, date: string) => createSinceRepresentation(s, date).identity.etag;
    expect(etag(again, '1900-01-01')).toBe(etag(snapshot, '1900-01-01'));
    // The same reviews, another date in the body: another ETag.
    expect(etag(snapshot, '1900-01-02')).not.toBe(etag(snapshot, '1900-01-01'));
    expect(etag(other, '1900-01-01')).not.toBe(etag(snapshot, '1900-01-01'));
  });
});

// The complexity audit: a since-query for an old date at 20,000 reviews cost 224 ms of gzip on the serving thread.
describe('GET /api/reviews/since/{date} of a large result', () => {
  let api: TestApi;
  let url: string;
  beforeAll(async () => {
    api = startTestApi(buildDataset({ reviews: 4000, seed: 9 }));
    url = await listen(api.server);
  });
  afterAll(() => close(api.server));

  it('is sent uncompressed past 1 MiB, and a small one compressed', async () => {
    expect(api.snapshot.representations.reviews.identity.body.length).toBeGreaterThan(1024 * 1024);
    const large = await rawRequest(url, '/api/reviews/since/1900-01-01', { 'Accept-Encoding': 'gzip, br' });
    expect([large.status, large.headers['content-encoding']]).toEqual([200, undefined]);
    expect((JSON.parse(large.body.toString()) as { matched: number }).matched).toBe(api.snapshot.reviewsDocument.reviews.length);
    const newest = api.snapshot.reviewsDocument.reviews[0]!.date;
    const small = await rawRequest(url, `/api/reviews/since/${newest}`, { 'Accept-Encoding': 'gzip' });
    expect([small.status, small.headers['content-encoding']]).toEqual([200, 'gzip']);
  });
});
