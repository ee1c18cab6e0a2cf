import { ReviewsDocument, publicUrls, type Review } from '@reviews/domain';
import { buildDataset } from '../fixtures.js';

export const URLS = publicUrls('https://reviews.example.com/');

/** A review whose every field needs escaping or special handling in a feed. */
export const TRICKY_REVIEW: Review = {
  id: '7ZZZZZZZZZZZZZZZZZZZZZZZZZ',
  author: 'Zoë "Z" <O\'Brien> & Sons',
  author_avatar_url: 'https://avatars.example.com/zoe.png?size=64&shape=round',
  rating: 2,
  date: '2099-12-31',
  text: 'Line one & <b>not bold</b> ]]> "quoted"\r\nLine two\twith a tab, a control char \u0001 here, an emoji 🕯️ and a lone surrogate \uD800 there.',
  source: 'google',
  source_url: null,
  owner_reply: { text: 'We are sorry — please call us <any time>.', date: '2100-01-02' },
  verified: false,
};

function newestFirst(a: Review, b: Review): number {
  if (a.date !== b.date) return a.date < b.date ? 1 : -1;
  return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}

/** A valid ReviewsDocument with `reviews` generated reviews (newest first) plus, optionally, TRICKY_REVIEW as the newest. */
export function sampleDocument({ reviews = 60, tricky = true }: { reviews?: number; tricky?: boolean } = {}): ReviewsDocument {
  const input = buildDataset({ reviews });
  const all = [...(tricky ? [TRICKY_REVIEW] : []), ...input.reviews].sort(newestFirst);
  const distribution = { '1': 0, '2': 0, '3': 0, '4': 0, '5': 0 };
  for (const review of all) distribution[String(review.rating) as keyof typeof distribution] += 1;
  const mean = all.reduce((sum, review) => sum + review.rating, 0) / all.length;
  return ReviewsDocument.parse({
    generated_at: '2025-07-01T14:00:00+02:00',
    business: input.business,
    aggregate_rating: { rating_value: all.length === 0 ? null : Math.round(mean * 10) / 10, review_count: all.length, best_rating: 5, worst_rating: 1, distribution },
    reviews: all,
  });
}
