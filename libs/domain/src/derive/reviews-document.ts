import { compareNewestFirst, round } from '../order.js';
import type { AggregateRating, ReviewsDocument } from '../schemas/documents.js';
import type { DatasetInput } from '../schemas/input.js';
import type { Review } from '../schemas/review.js';

/** /reviews.json: reviews newest first (date desc, id desc) and the aggregate rating computed from them. */
export function buildReviewsDocument(input: DatasetInput): ReviewsDocument {
  return {
    generated_at: input.generated_at,
    business: input.business,
    aggregate_rating: aggregateRating(input.reviews),
    reviews: [...input.reviews].sort(compareNewestFirst),
  };
}

function aggregateRating(reviews: readonly Review[]): AggregateRating {
  const distribution = { '1': 0, '2': 0, '3': 0, '4': 0, '5': 0 };
  let sum = 0;
  for (const { rating } of reviews) {
    distribution[String(rating) as keyof typeof distribution] += 1;
    sum += rating;
  }
  return {
    rating_value: reviews.length === 0 ? null : round(sum / reviews.length, 1),
    review_count: reviews.length,
    best_rating: 5,
    worst_rating: 1,
    distribution,
  };
}
