import { z } from 'zod';
import type { DatasetInput, PerReviewAnalysis, Review } from '@reviews/domain';
// Values come from the schema and taxonomy modules only, so the CLI never loads the rest of the domain.
import { IsoDate } from '@reviews/domain/schemas/primitives';
import { ratingOnlyAnalysis, writeReview, type Rating } from './compose-review.js';
import { writeEditorial } from './editorial.js';
import { FUNERAL_HOME } from './funeral-home.js';
import { FUNERAL_TAXONOMY } from './funeral-taxonomy.js';
import { createRandom } from './random.js';
import { avatarUrl, ownerReply, pickReviewer, pickSource } from './reviewers.js';
import { ulidAt } from './ulid.js';

export const DEFAULT_NOW = '2026-11-01';
export const ANALYSIS_MODEL = 'claude-sonnet-4-6';
/**
 * The most a dataset the services take can hold: a review is ~1,015 bytes of the file, so 200,000 are
 * ~203 MB of the store's 256 MiB (268 MB), with room for longer texts. The earlier 1,000,000 wrote
 * files that every check then refused as too large (publisher audit).
 */
export const MAX_REVIEWS = 200_000;
const EARLIEST_NOW = '1975-01-02';

export const GenerateOptions = z.strictObject({
  reviews: z.int().min(0).max(MAX_REVIEWS).meta({ description: 'Number of reviews to generate.' }),
  seed: z.int().min(0).max(0xffffffff).meta({ description: 'PRNG seed (unsigned 32-bit); the same seed gives the same dataset.' }),
  now: IsoDate.refine((day) => day >= EARLIEST_NOW, `must be ${EARLIEST_NOW} or later: reviews span the five years before it and ULID time starts in 1970`)
    .default(DEFAULT_NOW)
    .meta({ description: 'Publication day; reviews span the five years before it.' }),
});
export type GenerateOptions = z.input<typeof GenerateOptions>;

const DAY_MS = 86_400_000;
const SPAN_DAYS = 5 * 365;
const TEXTLESS_RATE = 0.08;
const RATING_MIX: readonly (readonly [Rating, number])[] = [
  [5, 72],
  [4, 14],
  [3, 5],
  [2, 4],
  [1, 5],
];

const isoDay = (day: number): string => new Date(day * DAY_MS).toISOString().slice(0, 10);

/**
 * A realistic funeral-home dataset: reviews over the five years before `now`, the per-review analysis
 * of exactly what each text says, and an FAQ, summary and pull quote grounded in those reviews.
 * Pure and deterministic: the same options always give the same dataset.
 */
export function generateDataset(options: GenerateOptions): DatasetInput {
  const { reviews: count, seed, now } = GenerateOptions.parse(options);
  const random = createRandom(seed);
  const publishDay = Date.parse(`${now}T00:00:00Z`) / DAY_MS;
  const lastDay = publishDay - 1;

  const reviews: Review[] = [];
  const analyses = new Map<string, PerReviewAnalysis>();
  const highlights = new Map<string, string>();
  const ids = new Set<string>();
  while (reviews.length < count) {
    // Review volume grows over the years: most dates come from a density rising towards `now`.
    const u = random.next();
    const position = random.chance(0.3) ? u : Math.sqrt(u);
    const day = lastDay - Math.min(SPAN_DAYS - 1, Math.floor((1 - position) * SPAN_DAYS));
    const id = ulidAt(day * DAY_MS + random.int(0, DAY_MS - 1), random);
    if (ids.has(id)) continue;
    ids.add(id);

    const rating = random.weighted(RATING_MIX);
    const reviewer = pickReviewer(random);
    const site = pickSource(random);
    let text: string | null = null;
    if (random.chance(TEXTLESS_RATE)) {
      analyses.set(id, ratingOnlyAnalysis(rating, random));
    } else {
      const written = writeReview(rating, random);
      text = written.text;
      analyses.set(id, written.analysis);
      if (written.highlight !== null) highlights.set(id, written.highlight);
    }
    reviews.push({
      id,
      author: reviewer.author,
      author_avatar_url: avatarUrl(site, random),
      rating,
      date: isoDay(day),
      text,
      source: site.source,
      source_url: random.chance(0.9) ? site.permalink(id) : null,
      owner_reply: ownerReply(rating, day, lastDay, reviewer, random),
      verified: random.chance(0.98),
    });
  }

  // Newest first. The ULID time prefix follows the review's day, so id order is (date, id) order.
  reviews.sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
  const perReview: Record<string, PerReviewAnalysis> = {};
  for (const review of reviews) perReview[review.id] = analyses.get(review.id) as PerReviewAnalysis;

  const editorial = writeEditorial(reviews, perReview, highlights);
  return {
    generated_at: `${now}T06:00:00Z`,
    business: structuredClone(FUNERAL_HOME),
    reviews,
    analysis: {
      model: ANALYSIS_MODEL,
      generated_at: `${now}T05:30:00Z`,
      taxonomy: structuredClone(FUNERAL_TAXONOMY),
      per_review: perReview,
      faq: editorial.faq,
      summary: editorial.summary,
      pull_quote: editorial.pull_quote,
    },
  };
}
