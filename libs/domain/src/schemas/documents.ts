import { z } from 'zod';
import { ASPECT_IDS } from '../taxonomy.js';
import { Business } from './business.js';
import { FaqEntry, PerReviewAnalysis } from './input.js';
import { IsoDate, IsoDateTime, Percent, Score, Slug, Ulid } from './primitives.js';
import { Review } from './review.js';
import { SearchCursor } from './search.js';

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
    reviews: z.array(Review).meta({ description: 'Every verified review of the dataset (the published ones), newest first (date, then id, descending).' }),
  })
  .meta({ id: 'ReviewsDocument', description: 'GET /reviews.json' });
export type ReviewsDocument = z.infer<typeof ReviewsDocument>;

/** Polarity counts shared by every aggregate that is built from mentions. */
const MentionStats = {
  mention_count: Count.meta({ description: 'Number of analysed reviews that mention it (a review counts once).' }),
  positive_count: Count,
  neutral_count: Count,
  negative_count: Count,
  positive_pct: Percent.meta({ description: 'positive_count / mention_count x 100, rounded to 1 decimal; 0 when never mentioned.' }),
  score: Score.meta({ description: '(positive_count - negative_count) / mention_count, from -1 to 1, rounded to 3 decimals; 0 when never mentioned.' }),
  example_review_ids: z.array(Ulid).max(5).meta({ description: 'Up to 5 mentioning reviews, newest first.' }),
};

export const AspectInsight = z
  .strictObject({
    id: z.enum(ASPECT_IDS),
    label: z.string(),
    ...MentionStats,
    top_phrases: z.array(z.string()).max(5).meta({ description: 'Up to 5 phrases the analysis quoted for this aspect, most frequent first (equal counts alphabetically).' }),
  })
  .meta({ id: 'AspectInsight', description: 'One aspect of the fixed taxonomy; polarity is the sentiment the analysis gave the aspect in each review.' });
export type AspectInsight = z.infer<typeof AspectInsight>;

/** Entities have no sentiment of their own in the analysis, so a mention takes the sentiment of its review. */
const ENTITY_POLARITY = 'A mention counts with the overall sentiment of the review it is in.';
export const TechnicianInsight = z
  .strictObject({ name: z.string(), role: z.string(), aliases: z.array(z.string()), ...MentionStats })
  .meta({ id: 'TechnicianInsight', description: `A staff member of the business. ${ENTITY_POLARITY}` });
export const ServiceInsight = z.strictObject({ id: Slug, label: z.string(), ...MentionStats }).meta({ id: 'ServiceInsight', description: `A service of the business. ${ENTITY_POLARITY}` });
export const ProblemInsight = z.strictObject({ id: Slug, label: z.string(), mention_count: Count, example_review_ids: z.array(Ulid).max(5) }).meta({ id: 'ProblemInsight' });
export const ServiceAreaInsight = z
  .strictObject({ name: z.string(), mention_count: Count })
  .meta({ id: 'ServiceAreaInsight', description: "The business's service areas in its order, then areas only reviews name, alphabetically." });
export const TopicInsight = z.strictObject({ id: Slug, label: z.string(), ...MentionStats }).meta({ id: 'TopicInsight', description: `A topic of the analysis taxonomy. ${ENTITY_POLARITY}` });
export type TechnicianInsight = z.infer<typeof TechnicianInsight>;
export type ServiceInsight = z.infer<typeof ServiceInsight>;
export type ProblemInsight = z.infer<typeof ProblemInsight>;
export type ServiceAreaInsight = z.infer<typeof ServiceAreaInsight>;
export type TopicInsight = z.infer<typeof TopicInsight>;

export const MonthlyPoint = z
  .strictObject({
    month: z.string().regex(/^\d{4}-(0[1-9]|1[0-2])$/).meta({ description: 'YYYY-MM' }),
    review_count: Count,
    avg_rating: z.number().min(1).max(5).nullable().meta({ description: 'Mean rating of the month, rounded to 2 decimals; null when the month has no reviews.' }),
    sentiment_score: Score.nullable().meta({ description: "Mean analysis score of the month's analysed reviews, rounded to 3 decimals; null when none." }),
  })
  .meta({ id: 'MonthlyPoint', description: 'One calendar month; every month from the oldest to the newest review is listed, empty ones included.' });
export type MonthlyPoint = z.infer<typeof MonthlyPoint>;

export const Trend = z.enum(['improving', 'stable', 'declining']).meta({
  description:
    'Mean rating of the reviews in the latest 6 months that have reviews compared with the reviews in the (up to) 6 months with reviews before those: +0.25 or more is improving, -0.25 or less is declining, anything else is stable. With 6 or fewer months that have reviews there is nothing to compare and the trend is stable.',
});
export type Trend = z.infer<typeof Trend>;

export const OverallSentiment = z
  .strictObject({
    score: Score.meta({ description: 'Mean per-review analysis score, rounded to 3 decimals; 0 when no review is analysed.' }),
    positive_pct: Percent,
    neutral_pct: Percent,
    negative_pct: Percent,
  })
  .meta({ id: 'OverallSentiment', description: 'Over the analysed reviews (those with a per_review entry). Percentages are rounded to 1 decimal, so they may not add up to exactly 100.' });
export type OverallSentiment = z.infer<typeof OverallSentiment>;

export const InsightsDocument = z
  .strictObject({
    version: z.int().min(1),
    generated_at: IsoDateTime,
    model: z.string(),
    review_count: Count.meta({ description: 'Number of published (verified) reviews the insights describe (equals aggregate_rating.review_count).' }),
    date_range: z.strictObject({ earliest: IsoDate.nullable(), latest: IsoDate.nullable() }).meta({ description: 'Oldest and newest review date; null when there are no reviews.' }),
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
    pull_quote: z.string().optional().meta({ description: 'One representative quote; absent when the dataset has none, or when it quotes an unverified review and no verified one.' }),
  })
  .meta({ id: 'InsightsDocument', description: 'GET /insights.json' });
export type InsightsDocument = z.infer<typeof InsightsDocument>;

export const SearchResult = z
  .strictObject({
    matched: Count.meta({ description: 'Number of reviews matching every filter, counted over all pages: the same on each.' }),
    returned: Count.meta({ description: 'Number of reviews in this response (at most `limit`).' }),
    reviews: z.array(Review).meta({ description: 'Matching reviews, newest first.' }),
    next_cursor: SearchCursor.nullable().meta({ description: 'Send it back as `cursor`, with the same filters, for the next page; null on the last page.' }),
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

/** `/healthz`: the process answers. */
export const HealthStatus = z.strictObject({ status: z.literal('ok') }).meta({ id: 'Health' });
export type HealthStatus = z.infer<typeof HealthStatus>;

/** `/readyz`: whether this process serves a dataset, which one, and how its dataset source is doing. */
export const ReadinessStatus = z
  .strictObject({
    status: z.enum(['ready', 'not_ready', 'shutting_down']),
    version: z.string().nullable().meta({ description: 'Dataset version served; null before the first load.' }),
    publishedAt: IsoDateTime.nullable().meta({ description: 'Publish time of that version.' }),
    source: z.strictObject({
      connected: z.boolean().meta({ description: 'Whether the dataset source (NATS, or the watched file) is reachable. An outage does not fail readiness: the last dataset keeps being served.' }),
      detail: z.string(),
    }),
    lastRejection: z.string().nullable().meta({ description: 'Why the last dataset version offered was refused, if one was.' }),
  })
  .meta({ id: 'Readiness' });
export type ReadinessStatus = z.infer<typeof ReadinessStatus>;
