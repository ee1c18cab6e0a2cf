import { describe, expect, it } from '@jest/globals';
import { ASPECTS, buildReviewsDocument, deriveInsights, InsightsDocument, ReviewsDocument, type Review } from '@reviews/domain';
import { buildDataset, datasetWith, makeAnalysis, makeReview, ulidOf } from './fixtures.js';

describe('buildReviewsDocument', () => {
  it('orders reviews newest first, breaking equal dates by id descending', () => {
    const reviews = [makeReview(1, '2025-01-01', 5), makeReview(3, '2025-02-01', 4), makeReview(2, '2025-02-01', 3), makeReview(4, '2024-12-31', 2)];
    const document = buildReviewsDocument(datasetWith(reviews));
    expect(document.reviews.map((r) => r.id)).toEqual([ulidOf(3), ulidOf(2), ulidOf(1), ulidOf(4)]);
    expect(ReviewsDocument.safeParse(document).success).toBe(true);
  });

  it('computes the aggregate rating with one decimal, rounding half up', () => {
    // 20 reviews summing to 89: mean 4.45, which binary floating point holds as 4.4499...
    const ratings = [...Array<number>(9).fill(5), ...Array<number>(11).fill(4)];
    const reviews = ratings.map((rating, i) => makeReview(i, '2025-01-01', rating));
    expect(buildReviewsDocument(datasetWith(reviews)).aggregate_rating).toEqual({
      rating_value: 4.5,
      review_count: 20,
      best_rating: 5,
      worst_rating: 1,
      distribution: { '1': 0, '2': 0, '3': 0, '4': 11, '5': 9 },
    });
    const thirds = [5, 4, 4].map((rating, i) => makeReview(i, '2025-01-01', rating));
    expect(buildReviewsDocument(datasetWith(thirds)).aggregate_rating.rating_value).toBe(4.3);
  });

  it('has a null rating value and zero counts without reviews', () => {
    const { aggregate_rating } = buildReviewsDocument(datasetWith([]));
    expect(aggregate_rating).toEqual({ rating_value: null, review_count: 0, best_rating: 5, worst_rating: 1, distribution: { '1': 0, '2': 0, '3': 0, '4': 0, '5': 0 } });
  });
});

describe('deriveInsights', () => {
  // Four reviews, three analysed; A and B share a date, so B (larger id) is the newer one.
  const A = makeReview(1, '2025-03-10', 5);
  const B = makeReview(2, '2025-03-10', 4);
  const C = makeReview(3, '2025-01-05', 2);
  const D = makeReview(4, '2025-01-20', 3);
  const input = datasetWith([C, A, D, B], {
    [A.id]: makeAnalysis({
      score: 0.9,
      aspects: [
        { id: 'compassion', sentiment: 'positive', phrase: 'very kind' },
        { id: 'communication', sentiment: 'positive', phrase: 'kept us informed' },
      ],
      technicians: ['Margaret Ellis'],
      services: ['direct-cremation'],
      topics: ['veterans'],
      service_areas: ['Springfield'],
    }),
    [B.id]: makeAnalysis({
      score: 0.5,
      aspects: [
        { id: 'compassion', sentiment: 'positive', phrase: 'very kind' },
        { id: 'pricing', sentiment: 'negative', phrase: 'too expensive' },
      ],
      technicians: ['Margaret Ellis', 'Daniel Okafor'],
      service_areas: ['Capital City'],
    }),
    [C.id]: makeAnalysis({
      sentiment: 'negative',
      score: -0.7,
      aspects: [
        { id: 'compassion', sentiment: 'negative', phrase: 'cold' },
        { id: 'pricing', sentiment: 'negative', phrase: 'too expensive' },
        { id: 'paperwork', sentiment: 'neutral', phrase: null },
      ],
      technicians: ['Daniel Okafor'],
      problems: ['long-wait'],
    }),
  });
  const insights = deriveInsights(input);

  it('conforms to the InsightsDocument schema', () => {
    expect(InsightsDocument.safeParse(insights).success).toBe(true);
  });

  it('copies identity, counts and the date range', () => {
    expect(insights).toMatchObject({ version: 1, generated_at: '2025-07-01T11:00:00Z', model: 'test-model', review_count: 4, date_range: { earliest: '2025-01-05', latest: '2025-03-10' } });
  });

  it('averages sentiment over analysed reviews only (scores 3 decimals, percentages 1 decimal)', () => {
    expect(insights.overall_sentiment).toEqual({ score: 0.233, positive_pct: 66.7, neutral_pct: 0, negative_pct: 33.3 });
  });

  it('lists all eleven aspects in taxonomy order with mention statistics', () => {
    expect(insights.aspects.map((a) => a.id)).toEqual(ASPECTS.map((a) => a.id));
    const byId = new Map(insights.aspects.map((a) => [a.id, a]));
    expect(byId.get('compassion')).toEqual({
      id: 'compassion',
      label: 'Compassion',
      mention_count: 3,
      positive_count: 2,
      neutral_count: 0,
      negative_count: 1,
      positive_pct: 66.7,
      score: 0.333,
      top_phrases: ['very kind', 'cold'],
      example_review_ids: [B.id, A.id, C.id],
    });
    expect(byId.get('pricing')).toMatchObject({ mention_count: 2, negative_count: 2, positive_pct: 0, score: -1, top_phrases: ['too expensive'], example_review_ids: [B.id, C.id] });
    expect(byId.get('paperwork')).toMatchObject({ mention_count: 1, neutral_count: 1, score: 0, top_phrases: [] });
    expect(byId.get('facility')).toEqual({
      id: 'facility',
      label: 'Facility',
      mention_count: 0,
      positive_count: 0,
      neutral_count: 0,
      negative_count: 0,
      positive_pct: 0,
      score: 0,
      top_phrases: [],
      example_review_ids: [],
    });
  });

  it('gives entity mentions the sentiment of their review, listing every known entity', () => {
    const { technicians, services, problems, service_areas } = insights.entities;
    expect(technicians.map((t) => [t.name, t.mention_count, t.positive_pct, t.score, t.example_review_ids])).toEqual([
      ['Margaret Ellis', 2, 100, 1, [B.id, A.id]],
      ['Daniel Okafor', 2, 50, 0, [B.id, C.id]],
      ['Rosa Delgado', 0, 0, 0, []],
    ]);
    expect(technicians[0]).toMatchObject({ role: 'Funeral director', aliases: ['Maggie', 'Mrs Ellis'] });
    expect(services.map((s) => [s.id, s.mention_count, s.example_review_ids])).toEqual([
      ['direct-cremation', 1, [A.id]],
      ['traditional-funeral', 0, []],
      ['memorial-service', 0, []],
    ]);
    expect(problems).toEqual([{ id: 'long-wait', label: 'Long wait', mention_count: 1, example_review_ids: [C.id] }]);
    expect(service_areas).toEqual([
      { name: 'Springfield', mention_count: 1 },
      { name: 'Shelbyville', mention_count: 0 },
      { name: 'Capital City', mention_count: 1 },
    ]);
    expect(insights.topics.map((t) => [t.id, t.mention_count, t.positive_count])).toEqual([
      ['veterans', 1, 1],
      ['pets', 0, 0],
    ]);
  });

  it('lists every month between the first and last review, empty months with nulls', () => {
    expect(insights.temporal).toEqual({
      monthly: [
        { month: '2025-01', review_count: 2, avg_rating: 2.5, sentiment_score: -0.7 },
        { month: '2025-02', review_count: 0, avg_rating: null, sentiment_score: null },
        { month: '2025-03', review_count: 2, avg_rating: 4.5, sentiment_score: 0.7 },
      ],
      trend: 'stable',
    });
  });

  // A publisher's audit: after 9999-12 came "10000-01", which sorts before it, and the month loop never ended.
  it('lists the months of the calendar\'s first and last years, across a year end, and ends', () => {
    const months = (dates: string[]) => deriveInsights(datasetWith(dates.map((date, i) => makeReview(i, date, 5)))).temporal.monthly.map((m) => m.month);
    expect(months(['9999-11-30', '9999-12-01'])).toEqual(['9999-11', '9999-12']);
    expect(months(['0000-12-31', '0001-01-01'])).toEqual(['0000-12', '0001-01']);
    expect(months(['2025-11-15', '2026-02-01'])).toEqual(['2025-11', '2025-12', '2026-01', '2026-02']);
  });

  it('copies per_review and faq, and summary/pull_quote only when present', () => {
    expect(insights.per_review).toEqual(input.analysis.per_review);
    expect(insights.faq).toEqual([]);
    expect(insights.summary).toBe('Families praise the staff.');
    expect('pull_quote' in insights).toBe(false);
  });

  it('does not depend on the order of the input reviews', () => {
    const shuffled = { ...input, reviews: [B, D, A, C] };
    expect(deriveInsights(shuffled)).toEqual(insights);
  });

  it('keeps at most 5 phrases (ties alphabetical) and the 5 newest examples', () => {
    const reviews = Array.from({ length: 7 }, (_, i) => makeReview(i, `2025-01-0${i + 1}`, 5));
    const phrases = ['g', 'f', 'e', 'd', 'c', 'b', 'a'];
    const perReview = Object.fromEntries(reviews.map((r, i) => [r.id, makeAnalysis({ aspects: [{ id: 'facility', sentiment: 'positive', phrase: i === 6 ? 'f' : (phrases[i] as string) }] })]));
    const facility = deriveInsights(datasetWith(reviews, perReview)).aspects.find((a) => a.id === 'facility');
    expect(facility?.top_phrases).toEqual(['f', 'b', 'c', 'd', 'e']);
    expect(facility?.example_review_ids).toEqual([6, 5, 4, 3, 2].map(ulidOf));
  });

  it('breaks equal phrase counts in code-point order, whatever order the reviews give them', () => {
    // Newest first the phrases read f, e, d, c, b, a; in input order a to f.
    const reviews = ['a', 'b', 'c', 'd', 'e', 'f'].map((_, i) => makeReview(i, `2025-02-0${i + 1}`, 5));
    const perReview = Object.fromEntries(reviews.map((r, i) => [r.id, makeAnalysis({ aspects: [{ id: 'facility', sentiment: 'positive', phrase: 'abcdef'[i] as string }] })]));
    for (const order of [reviews, [...reviews].reverse()]) {
      expect(deriveInsights(datasetWith(order, perReview)).aspects.find((a) => a.id === 'facility')?.top_phrases).toEqual(['a', 'b', 'c', 'd', 'e']);
    }
  });

  it('counts a name an analysis lists twice once for its review', () => {
    const [review] = [makeReview(1, '2025-02-01', 5)];
    const technician = buildDataset({ reviews: 0 }).business.technicians[0]!.name;
    const insights = deriveInsights(datasetWith([review!], { [review!.id]: makeAnalysis({ technicians: [technician, technician], service_areas: ['Outskirts', 'Outskirts'] }) }));
    expect(insights.entities.technicians.find((t) => t.name === technician)?.mention_count).toBe(1);
    expect(insights.entities.service_areas.find((a) => a.name === 'Outskirts')?.mention_count).toBe(1);
  });

  it('lists the business\'s own service areas first, in its order, then those only reviews name, alphabetically', () => {
    // Input order Zeta, Alpha, Mid; newest first Alpha, Zeta, Mid: neither is alphabetical.
    const named = [['Zeta', '2025-02-02'], ['Alpha', '2025-02-03'], ['Mid', '2025-02-01']] as const;
    const reviews = named.map(([, date], i) => makeReview(i, date, 5));
    const perReview = Object.fromEntries(reviews.map((r, i) => [r.id, makeAnalysis({ service_areas: [named[i]![0]] })]));
    const dataset = datasetWith(reviews, perReview);
    const areas = deriveInsights(dataset).entities.service_areas.map((a) => a.name);
    expect(areas).toEqual([...dataset.business.service_areas, 'Alpha', 'Mid', 'Zeta']);
  });

  it('has empty aggregates and a null date range without reviews', () => {
    const empty = deriveInsights(datasetWith([]));
    expect(empty).toMatchObject({ review_count: 0, date_range: { earliest: null, latest: null }, overall_sentiment: { score: 0, positive_pct: 0 }, temporal: { monthly: [], trend: 'stable' } });
    expect(InsightsDocument.safeParse(empty).success).toBe(true);
  });

  it('is deterministic', () => {
    const fixture = buildDataset({ reviews: 60 });
    expect(JSON.stringify(deriveInsights(fixture))).toBe(JSON.stringify(deriveInsights(structuredClone(fixture))));
  });
});

describe('trend', () => {
  /** One review per listed month (YYYY-MM) with the given rating. */
  const trendOf = (months: [string, number][]) => {
    const reviews: Review[] = months.map(([month, rating], i) => makeReview(i, `${month}-15`, rating));
    return deriveInsights(datasetWith(reviews)).temporal.trend;
  };
  const year = (from: number, ratings: number[]): [string, number][] => ratings.map((rating, i) => [`2024-${String(from + i).padStart(2, '0')}`, rating]);

  it('is stable with six or fewer months that have reviews', () => {
    expect(trendOf(year(1, [1, 1, 1, 5, 5, 5]))).toBe('stable');
  });

  it('compares the latest six months with reviews against the six before', () => {
    expect(trendOf(year(1, [3, 3, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4]))).toBe('improving');
    expect(trendOf(year(1, [4, 4, 4, 4, 4, 4, 3, 3, 3, 3, 3, 3]))).toBe('declining');
    // Means 3.0 and 3.1667: below the threshold.
    expect(trendOf(year(1, [3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 4]))).toBe('stable');
  });

  it('treats a change of exactly 0.25 as a trend and skips months without reviews', () => {
    const previous = year(1, [4, 4, 4, 4, 4, 4]);
    const latest: [string, number][] = [
      ['2025-01', 4],
      ['2025-03', 4],
      ['2025-05', 4],
      ['2025-07', 5],
      ['2025-07', 4],
      ['2025-09', 5],
      ['2025-11', 5],
      ['2026-01', 3],
    ];
    // Months with reviews: 2024-01..06 then 2025-01,03,05,07,09,11, 2026-01 -> latest six are 2025-03..2026-01.
    // Means are per review: latest (4 + 4 + 5 + 4 + 5 + 5 + 3) / 7 = 4.29; previous six (2024-02..06, 2025-01) 4.0.
    expect(trendOf([...previous, ...latest])).toBe('improving');
    // Latest six months with reviews: 2025-01..06, 8 reviews; previous six: 4.0.
    const up: [string, number][] = [['2025-01', 4], ['2025-01', 5], ['2025-02', 4], ['2025-03', 4], ['2025-04', 5], ['2025-05', 4], ['2025-06', 4], ['2025-06', 4]];
    expect(trendOf([...previous, ...up])).toBe('improving'); // 34 / 8 = 4.25
    const down: [string, number][] = [['2025-01', 4], ['2025-01', 3], ['2025-02', 4], ['2025-03', 4], ['2025-04', 3], ['2025-05', 4], ['2025-06', 4], ['2025-06', 4]];
    expect(trendOf([...previous, ...down])).toBe('declining'); // 30 / 8 = 3.75
  });
});
