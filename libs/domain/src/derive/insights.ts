import { compareNewestFirst, round } from '../order.js';
import type { AspectInsight, InsightsDocument, MonthlyPoint, OverallSentiment, ServiceAreaInsight, Trend } from '../schemas/documents.js';
import type { DatasetInput, PerReviewAnalysis } from '../schemas/input.js';
import type { Sentiment } from '../schemas/primitives.js';
import type { Review } from '../schemas/review.js';
import { ASPECTS } from '../taxonomy.js';

/** Rounding of every derived figure (also stated in the schema descriptions). */
const PCT_DECIMALS = 1;
const SCORE_DECIMALS = 3;
const RATING_DECIMALS = 2;
const MAX_EXAMPLES = 5;
const MAX_PHRASES = 5;
/** See the `Trend` schema description. */
const TREND_WINDOW_MONTHS = 6;
const TREND_THRESHOLD = 0.25;

interface Analysed {
  readonly review: Review;
  readonly analysis: PerReviewAnalysis;
}

/** /insights.json: every aggregate computed from reviews + per_review, so insights never disagree with reviews. */
export function deriveInsights(input: DatasetInput): InsightsDocument {
  const { business, analysis } = input;
  const newestFirst = [...input.reviews].sort(compareNewestFirst);
  const analysed: Analysed[] = newestFirst.flatMap((review) =>
    Object.hasOwn(analysis.per_review, review.id) ? [{ review, analysis: analysis.per_review[review.id] as PerReviewAnalysis }] : [],
  );
  const oldest = newestFirst.at(-1);
  const newest = newestFirst[0];

  const technicians = tallyBy(analysed, (a) => a.analysis.technicians);
  const services = tallyBy(analysed, (a) => a.analysis.services);
  const problems = tallyBy(analysed, (a) => a.analysis.problems);
  const topics = tallyBy(analysed, (a) => a.analysis.topics);
  const monthly = monthlySeries(newestFirst, analysis.per_review);

  return {
    version: analysis.taxonomy.version,
    generated_at: analysis.generated_at,
    model: analysis.model,
    review_count: newestFirst.length,
    date_range: { earliest: oldest?.date ?? null, latest: newest?.date ?? null },
    overall_sentiment: overallSentiment(analysed),
    aspects: aspectInsights(analysed),
    entities: {
      technicians: business.technicians.map((t) => ({ name: t.name, role: t.role, aliases: t.aliases, ...mentionStats(technicians.get(t.name)) })),
      services: business.services.map((s) => ({ id: s.id, label: s.label, ...mentionStats(services.get(s.id)) })),
      problems: analysis.taxonomy.problems.map((p) => {
        const tally = problems.get(p.id);
        return { id: p.id, label: p.label, mention_count: tally?.mentions ?? 0, example_review_ids: tally?.examples ?? [] };
      }),
      service_areas: serviceAreaInsights(business.service_areas, analysed),
    },
    topics: analysis.taxonomy.topics.map((t) => ({ id: t.id, label: t.label, ...mentionStats(topics.get(t.id)) })),
    temporal: { monthly: monthly.points, trend: trend(monthly.ratings) },
    per_review: analysis.per_review,
    faq: analysis.faq,
    ...(analysis.summary === null ? {} : { summary: analysis.summary }),
    ...(analysis.pull_quote === null ? {} : { pull_quote: analysis.pull_quote }),
  };
}

/** Mentions of one aspect or entity, fed newest review first so the first ids are the newest examples. */
class Tally {
  mentions = 0;
  readonly polarity: Record<Sentiment, number> = { positive: 0, neutral: 0, negative: 0 };
  readonly examples: string[] = [];

  add(sentiment: Sentiment, reviewId: string): void {
    this.mentions += 1;
    this.polarity[sentiment] += 1;
    if (this.examples.length < MAX_EXAMPLES) this.examples.push(reviewId);
  }
}

function mentionStats(tally: Tally | undefined) {
  const t = tally ?? new Tally();
  return {
    mention_count: t.mentions,
    positive_count: t.polarity.positive,
    neutral_count: t.polarity.neutral,
    negative_count: t.polarity.negative,
    positive_pct: percent(t.polarity.positive, t.mentions),
    score: t.mentions === 0 ? 0 : round((t.polarity.positive - t.polarity.negative) / t.mentions, SCORE_DECIMALS),
    example_review_ids: t.examples,
  };
}

function percent(part: number, whole: number): number {
  return whole === 0 ? 0 : round((part * 100) / whole, PCT_DECIMALS);
}

/** Entities carry no sentiment of their own: a mention takes the sentiment of the review it is in. Counted once per review. */
function tallyBy(analysed: readonly Analysed[], keysOf: (a: Analysed) => readonly string[]): Map<string, Tally> {
  const tallies = new Map<string, Tally>();
  for (const a of analysed) {
    for (const key of new Set(keysOf(a))) {
      let tally = tallies.get(key);
      if (!tally) tallies.set(key, (tally = new Tally()));
      tally.add(a.analysis.sentiment, a.review.id);
    }
  }
  return tallies;
}

function overallSentiment(analysed: readonly Analysed[]): OverallSentiment {
  const counts: Record<Sentiment, number> = { positive: 0, neutral: 0, negative: 0 };
  let scoreSum = 0;
  for (const { analysis } of analysed) {
    counts[analysis.sentiment] += 1;
    scoreSum += analysis.score;
  }
  const n = analysed.length;
  return {
    score: n === 0 ? 0 : round(scoreSum / n, SCORE_DECIMALS),
    positive_pct: percent(counts.positive, n),
    neutral_pct: percent(counts.neutral, n),
    negative_pct: percent(counts.negative, n),
  };
}

function aspectInsights(analysed: readonly Analysed[]): AspectInsight[] {
  const tallies = new Map<string, Tally>();
  const phrases = new Map<string, Map<string, number>>();
  for (const { review, analysis } of analysed) {
    for (const mention of analysis.aspects) {
      let tally = tallies.get(mention.id);
      if (!tally) tallies.set(mention.id, (tally = new Tally()));
      tally.add(mention.sentiment, review.id);
      if (mention.phrase === null) continue;
      let counts = phrases.get(mention.id);
      if (!counts) phrases.set(mention.id, (counts = new Map()));
      counts.set(mention.phrase, (counts.get(mention.phrase) ?? 0) + 1);
    }
  }
  return ASPECTS.map(({ id, label }) => ({ id, label, ...mentionStats(tallies.get(id)), top_phrases: topPhrases(phrases.get(id)) }));
}

/** Most frequent first; equal counts in code-point order, so the choice never depends on input order. */
function topPhrases(counts: Map<string, number> | undefined): string[] {
  if (!counts) return [];
  return [...counts]
    .sort(([a, countA], [b, countB]) => countB - countA || (a < b ? -1 : a > b ? 1 : 0))
    .slice(0, MAX_PHRASES)
    .map(([phrase]) => phrase);
}

/** The business's areas in its order (zero included), then areas only reviews name, alphabetically. */
function serviceAreaInsights(businessAreas: readonly string[], analysed: readonly Analysed[]): ServiceAreaInsight[] {
  const counts = new Map<string, number>(businessAreas.map((name) => [name, 0]));
  for (const { analysis } of analysed) {
    for (const name of new Set(analysis.service_areas)) counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  const listed = new Set(businessAreas);
  const others = [...counts.keys()].filter((name) => !listed.has(name)).sort();
  return [...listed, ...others].map((name) => ({ name, mention_count: counts.get(name) ?? 0 }));
}

interface MonthRatings {
  readonly count: number;
  readonly ratingSum: number;
}

/** Every calendar month from the oldest to the newest review, empty months included (count 0, nulls). */
function monthlySeries(newestFirst: readonly Review[], perReview: DatasetInput['analysis']['per_review']): { points: MonthlyPoint[]; ratings: MonthRatings[] } {
  const byMonth = new Map<string, { count: number; ratingSum: number; analysed: number; scoreSum: number }>();
  for (const review of newestFirst) {
    const month = review.date.slice(0, 7);
    let bucket = byMonth.get(month);
    if (!bucket) byMonth.set(month, (bucket = { count: 0, ratingSum: 0, analysed: 0, scoreSum: 0 }));
    bucket.count += 1;
    bucket.ratingSum += review.rating;
    if (Object.hasOwn(perReview, review.id)) {
      bucket.analysed += 1;
      bucket.scoreSum += (perReview[review.id] as PerReviewAnalysis).score;
    }
  }
  const first = newestFirst.at(-1);
  const last = newestFirst[0];
  const points: MonthlyPoint[] = [];
  const ratings: MonthRatings[] = [];
  if (!first || !last) return { points, ratings };
  // By index, not by string: after 9999-12 comes no "10000-01" that sorts before it.
  for (let index = monthIndex(first.date), lastIndex = monthIndex(last.date); index <= lastIndex; index++) {
    const month = monthOfIndex(index);
    const bucket = byMonth.get(month);
    points.push({
      month,
      review_count: bucket?.count ?? 0,
      avg_rating: bucket ? round(bucket.ratingSum / bucket.count, RATING_DECIMALS) : null,
      sentiment_score: bucket && bucket.analysed > 0 ? round(bucket.scoreSum / bucket.analysed, SCORE_DECIMALS) : null,
    });
    if (bucket) ratings.push({ count: bucket.count, ratingSum: bucket.ratingSum });
  }
  return { points, ratings };
}

/** Months since 0000-01 of a `YYYY-MM…` date. */
function monthIndex(date: string): number {
  return Number(date.slice(0, 4)) * 12 + Number(date.slice(5, 7)) - 1;
}

function monthOfIndex(index: number): string {
  return `${String(Math.floor(index / 12)).padStart(4, '0')}-${String((index % 12) + 1).padStart(2, '0')}`;
}

/** `monthsWithReviews` oldest first. The rule is the `Trend` schema description. */
function trend(monthsWithReviews: readonly MonthRatings[]): Trend {
  if (monthsWithReviews.length <= TREND_WINDOW_MONTHS) return 'stable';
  const latest = meanRating(monthsWithReviews.slice(-TREND_WINDOW_MONTHS));
  const previous = meanRating(monthsWithReviews.slice(-2 * TREND_WINDOW_MONTHS, -TREND_WINDOW_MONTHS));
  // Rounded so that a difference of exactly 0.25 in decimal is not lost to binary noise.
  const change = round(latest - previous, 6);
  if (change >= TREND_THRESHOLD) return 'improving';
  if (change <= -TREND_THRESHOLD) return 'declining';
  return 'stable';
}

function meanRating(months: readonly MonthRatings[]): number {
  const count = months.reduce((sum, m) => sum + m.count, 0);
  return months.reduce((sum, m) => sum + m.ratingSum, 0) / count;
}
