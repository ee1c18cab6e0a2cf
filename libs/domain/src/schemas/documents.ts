import { z } from 'zod';
import { ASPECT_IDS } from '../taxonomy.js';
import { Business } from './business.js';
import { FaqEntry, PerReviewAnalysis } from './input.js';
import { IsoDate, IsoDateTime, Percent, Score, Slug, Ulid } from './primitives.js';
import { Review } from './review.js';

const Count = z.int().min(0);

export const AggregateRating = z
  .strictObject({
    rating_value: z.number().min(1).max(5).nullable().meta({ description: 'Mean rating, one decimal; null when there are no reviews.' }),
    review_count: Count,
    best_rating: z.literal(5),
    worst_rating: z.literal(1),
    distribution: z.strictObject({ '1': Count, '2': Count, '3': Count, '4': Count, '5': Count }),
  })
  .meta({ id: 'AggregateRating' });
export type AggregateRating = z.infer<typeof AggregateRating>;

export const ReviewsDocument = z
  .strictObject({
    generated_at: IsoDateTime,
    business: Business,
    aggregate_rating: AggregateRating,
    reviews: z.array(Review).meta({ description: 'All reviews, newest first (date, then id, descending).' }),
  })
  .meta({ id: 'ReviewsDocument', description: 'GET /reviews.json' });
export type ReviewsDocument = z.infer<typeof ReviewsDocument>;

/** Polarity counts shared by every aggregate that is built from mentions. */
const MentionStats = {
  mention_count: Count,
  positive_count: Count,
  neutral_count: Count,
  negative_count: Count,
  positive_pct: Percent,
  score: Score,
  example_review_ids: z.array(Ulid).max(5),
};

export const AspectInsight = z
  .strictObject({
    id: z.enum(ASPECT_IDS),
    label: z.string(),
    ...MentionStats,
    top_phrases: z.array(z.string()).max(5),
  })
  .meta({ id: 'AspectInsight' });
export type AspectInsight = z.infer<typeof AspectInsight>;

export const TechnicianInsight = z.strictObject({ name: z.string(), role: z.string(), aliases: z.array(z.string()), ...MentionStats }).meta({ id: 'TechnicianInsight' });
export const ServiceInsight = z.strictObject({ id: Slug, label: z.string(), ...MentionStats }).meta({ id: 'ServiceInsight' });
export const ProblemInsight = z.strictObject({ id: Slug, label: z.string(), mention_count: Count, example_review_ids: z.array(Ulid).max(5) }).meta({ id: 'ProblemInsight' });
export const ServiceAreaInsight = z.strictObject({ name: z.string(), mention_count: Count }).meta({ id: 'ServiceAreaInsight' });
export const TopicInsight = z.strictObject({ id: Slug, label: z.string(), ...MentionStats }).meta({ id: 'TopicInsight' });
export type TechnicianInsight = z.infer<typeof TechnicianInsight>;
export type ServiceInsight = z.infer<typeof ServiceInsight>;
export type ProblemInsight = z.infer<typeof ProblemInsight>;
export type ServiceAreaInsight = z.infer<typeof ServiceAreaInsight>;
export type TopicInsight = z.infer<typeof TopicInsight>;

export const MonthlyPoint = z
  .strictObject({
    month: z.string().regex(/^\d{4}-(0[1-9]|1[0-2])$/).meta({ description: 'YYYY-MM' }),
    review_count: Count,
    avg_rating: z.number().min(1).max(5).nullable(),
    sentiment_score: Score.nullable(),
  })
  .meta({ id: 'MonthlyPoint' });
export type MonthlyPoint = z.infer<typeof MonthlyPoint>;

export const Trend = z.enum(['improving', 'stable', 'declining']).meta({
  description: 'Mean rating of the latest 6 months with reviews compared with the 6 months before: +0.25 or more is improving, -0.25 or less is declining.',
});
export type Trend = z.infer<typeof Trend>;

export const OverallSentiment = z.strictObject({ score: Score, positive_pct: Percent, neutral_pct: Percent, negative_pct: Percent }).meta({ id: 'OverallSentiment' });
export type OverallSentiment = z.infer<typeof OverallSentiment>;

export const InsightsDocument = z
  .strictObject({
    version: z.int().min(1),
    generated_at: IsoDateTime,
    model: z.string(),
    review_count: Count,
    date_range: z.strictObject({ earliest: IsoDate.nullable(), latest: IsoDate.nullable() }),
    overall_sentiment: OverallSentiment,
    aspects: z.array(AspectInsight),
    entities: z.strictObject({
      technicians: z.array(TechnicianInsight),
      services: z.array(ServiceInsight),
      problems: z.array(ProblemInsight),
      service_areas: z.array(ServiceAreaInsight),
    }),
    topics: z.array(TopicInsight),
    temporal: z.strictObject({ monthly: z.array(MonthlyPoint), trend: Trend }),
    per_review: z.record(Ulid, PerReviewAnalysis),
    faq: z.array(FaqEntry),
    summary: z.string().optional(),
    pull_quote: z.string().optional(),
  })
  .meta({ id: 'InsightsDocument', description: 'GET /insights.json' });
export type InsightsDocument = z.infer<typeof InsightsDocument>;

export const SearchResult = z
  .strictObject({
    matched: Count.meta({ description: 'Number of reviews matching every filter.' }),
    returned: Count.meta({ description: 'Number of reviews in this response (at most `limit`).' }),
    reviews: z.array(Review).meta({ description: 'Matching reviews, newest first.' }),
  })
  .meta({ id: 'SearchResult' });
export type SearchResult = z.infer<typeof SearchResult>;

export const SinceResult = z
  .strictObject({
    since: IsoDate,
    matched: Count,
    reviews: z.array(Review).meta({ description: 'Reviews dated on or after `since`, newest first.' }),
  })
  .meta({ id: 'SinceResult' });
export type SinceResult = z.infer<typeof SinceResult>;

export const Issue = z
  .object({
    code: z.string(),
    path: z.array(z.union([z.string(), z.number()])),
    message: z.string(),
  })
  .meta({ id: 'Issue', description: 'One validation problem, as zod reports it; `path` names the offending parameter.' });

export const ErrorEnvelope = z
  .strictObject({
    error: z.string().meta({ description: 'Machine-readable error code, e.g. invalid_query, not_found, method_not_allowed.' }),
    message: z.string(),
    issues: z.array(Issue).optional(),
  })
  .meta({ id: 'Error' });
export type ErrorEnvelope = z.infer<typeof ErrorEnvelope>;
export type Issue = z.infer<typeof Issue>;
