import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { buildReviewsDocument, createSearchEngine, deriveInsights, InsightsDocument, SearchParams, validateDataset, type DatasetInput } from '@reviews/domain';

/**
 * The bundled sample (data/sample-dataset.json, from libs/dataset-generator) must validate, and its
 * insights must equal a second, deliberately naive computation written without the domain's helpers.
 */
const raw: unknown = JSON.parse(readFileSync(new URL('../../../data/sample-dataset.json', import.meta.url), 'utf8'));

function validSample(): DatasetInput {
  const result = validateDataset(raw);
  if (!result.ok) throw new Error(`sample dataset is invalid: ${JSON.stringify(result.issues.slice(0, 5))}`);
  return result.input;
}

/** `actual` is `exact` rounded to `decimals` places (either way on a tie: only the rounding mode may differ). */
function expectRounded(actual: number | null | undefined, exact: number, decimals: number) {
  expect(typeof actual).toBe('number');
  expect(Math.abs((actual as number) - exact)).toBeLessThanOrEqual(0.5 * 10 ** -decimals + 1e-9);
}

describe('sample dataset', () => {
  const input = validSample();
  const insights = deriveInsights(input);
  const analysed = input.reviews.filter((r) => input.analysis.per_review[r.id] !== undefined);
  const analysisOf = (id: string) => input.analysis.per_review[id]!;
  const newestFirstIds = (ids: string[]) => {
    const byId = new Map(input.reviews.map((r) => [r.id, r]));
    return [...ids].sort((a, b) => (byId.get(b)!.date + b).localeCompare(byId.get(a)!.date + a)).slice(0, 5);
  };

  it('validates and derives a schema-conformant insights document', () => {
    expect(input.reviews.length).toBeGreaterThanOrEqual(400);
    expect(InsightsDocument.safeParse(insights).success).toBe(true);
  });

  it('has the aggregate rating and date range of its reviews', () => {
    const { aggregate_rating } = buildReviewsDocument(input);
    let total = 0;
    for (const r of input.reviews) total += r.rating;
    expectRounded(aggregate_rating.rating_value, total / input.reviews.length, 1);
    for (const stars of [1, 2, 3, 4, 5] as const) expect(aggregate_rating.distribution[`${stars}`]).toBe(input.reviews.filter((r) => r.rating === stars).length);
    const dates = input.reviews.map((r) => r.date).sort();
    expect(insights.review_count).toBe(input.reviews.length);
    expect(insights.date_range).toEqual({ earliest: dates[0], latest: dates[dates.length - 1] });
  });

  it('has the overall sentiment of its analysed reviews', () => {
    const scores = analysed.map((r) => analysisOf(r.id).score);
    expectRounded(insights.overall_sentiment.score, scores.reduce((a, b) => a + b, 0) / scores.length, 3);
    for (const polarity of ['positive', 'neutral', 'negative'] as const) {
      const share = (100 * analysed.filter((r) => analysisOf(r.id).sentiment === polarity).length) / analysed.length;
      expectRounded(insights.overall_sentiment[`${polarity}_pct`], share, 1);
    }
  });

  it('has the aspect statistics of the per-review mentions', () => {
    for (const aspect of insights.aspects) {
      const mentions = analysed.flatMap((r) => analysisOf(r.id).aspects.filter((a) => a.id === aspect.id).map((a) => ({ ...a, review: r.id })));
      const count = (polarity: string) => mentions.filter((m) => m.sentiment === polarity).length;
      expect([aspect.mention_count, aspect.positive_count, aspect.neutral_count, aspect.negative_count]).toEqual([mentions.length, count('positive'), count('neutral'), count('negative')]);
      if (mentions.length > 0) {
        expectRounded(aspect.positive_pct, (100 * count('positive')) / mentions.length, 1);
        expectRounded(aspect.score, (count('positive') - count('negative')) / mentions.length, 3);
      }
      expect(aspect.example_review_ids).toEqual(newestFirstIds(mentions.map((m) => m.review)));
      const frequency: Record<string, number> = {};
      for (const m of mentions) if (m.phrase !== null) frequency[m.phrase] = (frequency[m.phrase] ?? 0) + 1;
      const ranked = Object.keys(frequency).sort((a, b) => frequency[b]! - frequency[a]! || (a < b ? -1 : 1));
      expect(aspect.top_phrases).toEqual(ranked.slice(0, 5));
    }
  });

  it('has entity and topic mention counts', () => {
    const mentioning = (pick: (id: string) => string[], key: string) => analysed.filter((r) => pick(r.id).includes(key));
    for (const t of insights.entities.technicians) {
      const reviews = mentioning((id) => analysisOf(id).technicians, t.name);
      expect([t.mention_count, t.positive_count]).toEqual([reviews.length, reviews.filter((r) => analysisOf(r.id).sentiment === 'positive').length]);
    }
    for (const s of insights.entities.services) expect(s.mention_count).toBe(mentioning((id) => analysisOf(id).services, s.id).length);
    for (const p of insights.entities.problems) expect(p.mention_count).toBe(mentioning((id) => analysisOf(id).problems, p.id).length);
    for (const a of insights.entities.service_areas) expect(a.mention_count).toBe(mentioning((id) => analysisOf(id).service_areas, a.name).length);
    for (const t of insights.topics) expect(t.mention_count).toBe(mentioning((id) => analysisOf(id).topics, t.id).length);
    expect(insights.entities.technicians.map((t) => t.name)).toEqual(input.business.technicians.map((t) => t.name));
  });

  it('has a monthly series covering every month and the trend its rule gives', () => {
    const months = insights.temporal.monthly;
    const total = months.reduce((sum, m) => sum + m.review_count, 0);
    expect(total).toBe(input.reviews.length);
    for (let i = 1; i < months.length; i++) {
      const [y, m] = months[i - 1]!.month.split('-').map(Number) as [number, number];
      expect(months[i]!.month).toBe(m === 12 ? `${y + 1}-01` : `${y}-${String(m + 1).padStart(2, '0')}`);
    }
    for (const point of months) {
      const inMonth = input.reviews.filter((r) => r.date.startsWith(point.month));
      if (inMonth.length === 0) expect(point.avg_rating).toBeNull();
      else expectRounded(point.avg_rating, inMonth.reduce((s, r) => s + r.rating, 0) / inMonth.length, 2);
    }
    const active = months.filter((m) => m.review_count > 0).map((m) => input.reviews.filter((r) => r.date.startsWith(m.month)).map((r) => r.rating));
    const mean = (groups: number[][]) => groups.flat().reduce((a, b) => a + b, 0) / groups.flat().length;
    const change = active.length > 6 ? mean(active.slice(-6)) - mean(active.slice(-12, -6)) : 0;
    expect(insights.temporal.trend).toBe(change >= 0.25 ? 'improving' : change <= -0.25 ? 'declining' : 'stable');
  });

  it('is searchable: staff aliases and service labels from the sample resolve', () => {
    const document = buildReviewsDocument(input);
    const engine = createSearchEngine(input, document.reviews, input.business, insights);
    for (const technician of input.business.technicians) {
      const expected = insights.entities.technicians.find((t) => t.name === technician.name)!.mention_count;
      for (const key of [technician.name, ...technician.aliases]) expect(engine.search(SearchParams.parse({ mentions_technician: key.toUpperCase(), limit: 1 })).matched).toBe(expected);
    }
    for (const service of input.business.services) {
      const expected = insights.entities.services.find((s) => s.id === service.id)!.mention_count;
      expect(engine.search(SearchParams.parse({ mentions_service: service.label.toLowerCase() })).matched).toBe(expected);
    }
  });
});
