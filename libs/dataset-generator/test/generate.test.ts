import { describe, it, expect } from '@jest/globals';
import { DatasetInput, validateDataset, type PerReviewAnalysis, type Review } from '@reviews/domain';
import { formatJson, generateDataset, FUNERAL_HOME } from '@reviews/dataset-generator';

const serialize = (value: unknown): string => [...formatJson(value)].join('');
const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const dataset = generateDataset({ reviews: 3000, seed: 42 });
const withText = dataset.reviews.filter((review): review is Review & { text: string } => review.text !== null);
const analysisOf = (review: Review): PerReviewAnalysis => {
  const analysis = dataset.analysis.per_review[review.id];
  if (analysis === undefined) throw new Error(`no per_review entry for ${review.id}`);
  return analysis;
};

describe('generateDataset: determinism', () => {
  it('gives byte-identical output for the same seed and different output for another seed', () => {
    const once = serialize(generateDataset({ reviews: 500, seed: 7 }));
    expect(serialize(generateDataset({ reviews: 500, seed: 7 }))).toBe(once);
    expect(serialize(generateDataset({ reviews: 500, seed: 8 }))).not.toBe(once);
  });

  it('serializes to JSON that parses back to the same dataset', () => {
    const small = generateDataset({ reviews: 50, seed: 3 });
    expect(JSON.parse(serialize(small))).toEqual(small);
  });

  it('rejects options outside their bounds, naming the option', () => {
    expect(() => generateDataset({ reviews: -1, seed: 1 })).toThrow(/reviews/);
    expect(() => generateDataset({ reviews: 1, seed: 2 ** 32 })).toThrow(/seed/);
    expect(() => generateDataset({ reviews: 1, seed: 1, now: '2026-02-30' })).toThrow(/calendar date/);
    expect(() => generateDataset({ reviews: 1, seed: 1, now: '1970-06-01' })).toThrow(/1975-01-02 or later/);
  });
});

describe('generateDataset: validity', () => {
  it.each([0, 1, 25, 3000])('%i reviews pass the DatasetInput schema and validateDataset', (count) => {
    const generated = count === 3000 ? dataset : generateDataset({ reviews: count, seed: count + 1 });
    expect(DatasetInput.safeParse(generated).error?.issues).toBeUndefined();
    const result = validateDataset(generated);
    expect(result.ok ? [] : result.issues).toEqual([]);
    expect(generated.reviews).toHaveLength(count);
    expect(Object.keys(generated.analysis.per_review)).toEqual(generated.reviews.map((review) => review.id));
  });

  it('lists reviews newest first, within the five years before `now`, with replies not before the review', () => {
    const dated = generateDataset({ reviews: 400, seed: 5, now: '2025-06-15' });
    const dates = dated.reviews.map((review) => review.date);
    expect(dates).toEqual([...dates].sort().reverse());
    expect(dates.at(-1)! >= '2020-06-16').toBe(true);
    expect(dates[0]! < '2025-06-15').toBe(true);
    for (const review of dated.reviews) {
      if (review.owner_reply === null) continue;
      expect(review.owner_reply.date >= review.date).toBe(true);
      expect(review.owner_reply.date < '2025-06-15').toBe(true);
    }
  });
});

describe('generateDataset: per_review analysis matches the text', () => {
  it('quotes every aspect phrase verbatim, once per aspect', () => {
    const mismatches: string[] = [];
    for (const review of withText) {
      const { aspects } = analysisOf(review);
      for (const aspect of aspects) if (aspect.phrase === null || !review.text.includes(aspect.phrase)) mismatches.push(`${review.id}: ${aspect.phrase}`);
      if (new Set(aspects.map((aspect) => aspect.id)).size !== aspects.length) mismatches.push(`${review.id}: repeated aspect`);
    }
    expect(mismatches).toEqual([]);
  });

  it('lists exactly the staff, services and towns the text names', () => {
    const staffPatterns = FUNERAL_HOME.technicians.map((member) => ({
      name: member.name,
      pattern: new RegExp(`\\b(?:${[member.name, ...member.aliases].map(escapeRegExp).join('|')})\\b`),
    }));
    const labels = new Map(FUNERAL_HOME.services.map((service) => [service.id, service.label.toLowerCase()]));
    const mismatches: string[] = [];
    for (const review of withText) {
      const analysis = analysisOf(review);
      for (const { name, pattern } of staffPatterns) {
        if (pattern.test(review.text) !== analysis.technicians.includes(name)) mismatches.push(`${review.id}: staff ${name}`);
      }
      for (const id of analysis.services) {
        if (!review.text.toLowerCase().includes(labels.get(id) ?? `unknown service ${id}`)) mismatches.push(`${review.id}: service ${id}`);
      }
      for (const area of FUNERAL_HOME.service_areas) {
        if (review.text.includes(area) !== analysis.service_areas.includes(area)) mismatches.push(`${review.id}: town ${area}`);
      }
    }
    expect(mismatches).toEqual([]);
  });

  it('derives sentiment and score from the rating, and problems only from negative remarks', () => {
    const expected = { 1: 'negative', 2: 'negative', 3: 'neutral', 4: 'positive', 5: 'positive' } as const;
    const scoreFits = { positive: (score: number) => score > 0, neutral: (score: number) => Math.abs(score) <= 0.25, negative: (score: number) => score < 0 };
    const mismatches: string[] = [];
    for (const review of dataset.reviews) {
      const analysis = analysisOf(review);
      if (analysis.sentiment !== expected[review.rating as keyof typeof expected]) mismatches.push(`${review.id}: ${analysis.sentiment} for ${review.rating} stars`);
      if (!scoreFits[analysis.sentiment](analysis.score)) mismatches.push(`${review.id}: score ${analysis.score} is not ${analysis.sentiment}`);
      if (analysis.problems.length > 0 && !analysis.aspects.some((aspect) => aspect.sentiment === 'negative')) mismatches.push(`${review.id}: problem without a complaint`);
    }
    expect(mismatches).toEqual([]);
  });

  it('gives rating-only reviews a polarity and no mentions', () => {
    const ratingOnly = dataset.reviews.filter((review) => review.text === null);
    expect(ratingOnly.length).toBeGreaterThan(0);
    for (const review of ratingOnly) {
      const { aspects, technicians, services, problems, service_areas, topics } = analysisOf(review);
      expect([aspects, technicians, services, problems, service_areas, topics].flat()).toEqual([]);
    }
  });
});

describe('generateDataset: realistic mix', () => {
  const share = (predicate: (review: Review) => boolean): number => dataset.reviews.filter(predicate).length / dataset.reviews.length;

  it('is mostly five stars with a minority of complaints', () => {
    expect(share((review) => review.rating === 5)).toBeGreaterThan(0.65);
    expect(share((review) => review.rating === 5)).toBeLessThan(0.8);
    expect(share((review) => review.rating === 4)).toBeGreaterThan(0.08);
    expect(share((review) => review.rating === 3)).toBeGreaterThan(0.02);
    expect(share((review) => review.rating <= 2)).toBeGreaterThan(0.05);
    expect(share((review) => review.rating <= 2)).toBeLessThan(0.15);
  });

  it('has about 8% rating-only reviews, about a quarter with owner replies, three sources and some missing avatars', () => {
    expect(share((review) => review.text === null)).toBeGreaterThan(0.05);
    expect(share((review) => review.text === null)).toBeLessThan(0.11);
    expect(share((review) => review.owner_reply !== null)).toBeGreaterThan(0.2);
    expect(share((review) => review.owner_reply !== null)).toBeLessThan(0.32);
    expect(new Set(dataset.reviews.map((review) => review.source))).toEqual(new Set(['google', 'facebook', 'yelp']));
    expect(share((review) => review.author_avatar_url === null)).toBeGreaterThan(0.1);
  });

  it('mentions every staff member, service and town somewhere', () => {
    const all = Object.values(dataset.analysis.per_review);
    expect(new Set(all.flatMap((analysis) => analysis.technicians))).toEqual(new Set(FUNERAL_HOME.technicians.map((member) => member.name)));
    expect(new Set(all.flatMap((analysis) => analysis.services))).toEqual(new Set(FUNERAL_HOME.services.map((service) => service.id)));
    expect(new Set(all.flatMap((analysis) => analysis.service_areas))).toEqual(new Set(FUNERAL_HOME.service_areas));
  });
});

describe('generateDataset: editorial', () => {
  it('writes 6 to 8 FAQ entries citing reviews, a summary and a pull quote from a five-star review', () => {
    const { faq, summary, pull_quote } = dataset.analysis;
    expect(faq.length).toBeGreaterThanOrEqual(6);
    expect(faq.length).toBeLessThanOrEqual(8);
    const ids = new Set(dataset.reviews.map((review) => review.id));
    for (const entry of faq) for (const id of entry.source_review_ids) expect(ids.has(id)).toBe(true);
    expect(summary).toContain('3000 reviews');
    expect(pull_quote).not.toBeNull();
    expect(withText.some((review) => review.rating === 5 && review.text.includes(pull_quote ?? '-'))).toBe(true);
  });

  it('leaves the editorial empty when there are no reviews', () => {
    const empty = generateDataset({ reviews: 0, seed: 1 });
    expect(empty.analysis).toMatchObject({ faq: [], summary: null, pull_quote: null, per_review: {} });
  });
});
