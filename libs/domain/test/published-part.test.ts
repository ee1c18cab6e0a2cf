import { describe, expect, it } from '@jest/globals';
import { buildSnapshotFromInput, datasetVersion, publishedPart, type DatasetInput } from '@reviews/domain';
import { buildDataset } from './fixtures.js';

const options = { baseUrl: 'https://reviews.example.com', publishedAt: new Date('2026-01-01T00:00:00Z') };

/** The fixture with the reviews at `indexes` from an unverified source. */
function withUnverified(input: DatasetInput, indexes: readonly number[]): DatasetInput {
  return { ...input, reviews: input.reviews.map((review, i) => (indexes.includes(i) ? { ...review, verified: false } : review)) };
}

describe('only verified reviews are published (interface spec: "publishes verified customer reviews")', () => {
  const base = buildDataset({ reviews: 30, seed: 12 });
  // The fixture's FAQ entry is sourced from reviews 0 and 1.
  const input = withUnverified(base, [0, 5, 6]);
  const unverified = new Set([0, 5, 6].map((i) => input.reviews[i]!.id));
  const snapshot = buildSnapshotFromInput(input, options);

  it('leaves unverified reviews out of /reviews.json, its aggregate rating, and the feeds', () => {
    const { reviews, aggregate_rating } = snapshot.reviewsDocument;
    expect(reviews).toHaveLength(27);
    expect(reviews.every((review) => review.verified)).toBe(true);
    expect(aggregate_rating.review_count).toBe(27);
    const verifiedRatings = input.reviews.filter((review) => review.verified).map((review) => review.rating);
    expect(aggregate_rating.rating_value).toBe(Math.round((verifiedRatings.reduce((a, b) => a + b, 0) / 27) * 10) / 10);
    for (const topic of ['feedJson', 'feedAtom', 'reviews'] as const) {
      const body = snapshot.representations[topic].identity.body.toString('utf8');
      for (const id of unverified) expect({ topic, id, shown: body.includes(id) }).toEqual({ topic, id, shown: false });
    }
  });

  it('derives every insight from the verified reviews alone, and keeps an FAQ answer only with its verified sources', () => {
    const insights = snapshot.insightsDocument;
    expect(insights.review_count).toBe(27);
    expect(Object.keys(insights.per_review).some((id) => unverified.has(id))).toBe(false);
    expect(JSON.stringify(insights)).not.toMatch(new RegExp([...unverified].join('|')));
    expect(insights.faq.map((entry) => entry.source_review_ids)).toEqual([[input.reviews[1]!.id]]);
    const withoutGround = buildSnapshotFromInput(withUnverified(base, [0, 1]), options);
    expect(withoutGround.insightsDocument.faq).toEqual([]);
  });

  it('keeps the pull quote unless it quotes an unverified review and no published one', () => {
    const only = 'Words that only the first review says.';
    const said = { ...base, reviews: base.reviews.map((review, i) => (i === 0 || i === 1 ? { ...review, text: `${only} ${review.text ?? ''}` } : review)) };
    const pullQuote = (quote: string, unverifiedIndexes: readonly number[]) =>
      buildSnapshotFromInput(withUnverified({ ...said, analysis: { ...said.analysis, pull_quote: quote } }, unverifiedIndexes), options).insightsDocument.pull_quote;
    expect(pullQuote(only, [0, 1])).toBeUndefined();
    expect(pullQuote(only, [0])).toBe(only);
    expect(pullQuote('Editorial words found in no review.', [0, 1])).toBe('Editorial words found in no review.');
    // Found by its words: quotation marks, ellipses, case, punctuation and a signature aside.
    for (const quoted of ['“Words that only the first review says.”', '"Words that only the first review says"', '…only the first review says.', 'words that ONLY the first review says', 'Words that only… review says. — Author 0', 'Words that only ... says - Author 0']) {
      expect({ quoted, published: pullQuote(quoted, [0, 1]) }).toEqual({ quoted, published: undefined });
      expect({ quoted, published: pullQuote(quoted, [0]) }).toEqual({ quoted, published: quoted });
    }
    // Words the review does not hold in that order are not its words.
    expect(pullQuote('Says the first review only.', [0, 1])).toBe('Says the first review only.');
    // Nor its fragments in another order.
    expect(pullQuote('the first review says… Words that only', [0, 1])).toBe('the first review says… Words that only');
  });

  it('finds no unverified review by search or by id', () => {
    expect(snapshot.search.search({ limit: 100 }).matched).toBe(27);
    for (const id of unverified) expect(snapshot.search.review(id)).toBeUndefined();
    expect(snapshot.search.since('2000-01-01').reviews.some((review) => unverified.has(review.id))).toBe(false);
  });

  it('keeps the dataset whole in the store: the version is that of everything published', () => {
    expect(snapshot.version).toBe(datasetVersion(input));
    expect(snapshot.input).toBe(input);
  });

  it('copies nothing when every review is verified', () => {
    expect(publishedPart(base)).toBe(base);
  });
});
