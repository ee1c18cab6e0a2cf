import { z } from 'zod';
import { ASPECT_IDS, INSIGHTS_VERSION } from '../taxonomy.js';
import { Business } from './business.js';
import { IsoDateTime, Score, Sentiment, Slug, Ulid } from './primitives.js';
import { Review } from './review.js';

/** What the analysis model said about one review. Aggregates are derived from these, never published. */
export const PerReviewAnalysis = z
  .strictObject({
    sentiment: Sentiment,
    score: Score,
    aspects: z.array(
      z.strictObject({
        id: z.enum(ASPECT_IDS),
        sentiment: Sentiment,
        phrase: z.string().min(1).nullable().meta({ description: 'Short phrase from the review text about this aspect.' }),
      }),
    ),
    technicians: z.array(z.string().min(1)).meta({ description: 'Canonical names of staff the review mentions.' }),
    services: z.array(Slug).meta({ description: 'Ids of services the review mentions.' }),
    problems: z.array(Slug).meta({ description: 'Ids of problems the review reports.' }),
    service_areas: z.array(z.string().min(1)),
    topics: z.array(Slug),
  })
  .meta({ id: 'PerReviewAnalysis' });
export type PerReviewAnalysis = z.infer<typeof PerReviewAnalysis>;

export const LabelledId = z.strictObject({ id: Slug, label: z.string().min(1) });

export const Taxonomy = z.strictObject({
  version: z.literal(INSIGHTS_VERSION),
  topics: z.array(LabelledId),
  problems: z.array(LabelledId),
});

export const FaqEntry = z
  .strictObject({
    question: z.string().min(1),
    answer: z.string().min(1),
    source_review_ids: z.array(Ulid).min(1),
  })
  .meta({ id: 'FaqEntry' });

export const Analysis = z.strictObject({
  model: z.string().min(1),
  generated_at: IsoDateTime,
  taxonomy: Taxonomy,
  per_review: z.record(Ulid, PerReviewAnalysis),
  faq: z.array(FaqEntry),
  summary: z.string().min(1).nullable(),
  pull_quote: z.string().min(1).nullable(),
});

/**
 * The published dataset: what a publisher supplies. Everything else served (aggregate rating,
 * insights aggregates, feeds) is derived from it by libs/domain.
 */
export const DatasetInput = z
  .strictObject({
    generated_at: IsoDateTime,
    business: Business,
    reviews: z.array(Review),
    analysis: Analysis,
  })
  .meta({ id: 'DatasetInput' });
export type DatasetInput = z.infer<typeof DatasetInput>;
export type Analysis = z.infer<typeof Analysis>;
export type Taxonomy = z.infer<typeof Taxonomy>;
export type FaqEntry = z.infer<typeof FaqEntry>;
export type LabelledId = z.infer<typeof LabelledId>;
