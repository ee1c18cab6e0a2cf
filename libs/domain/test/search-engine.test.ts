import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { buildReviewsDocument, createSearchEngine, deriveInsights, SearchParams, type DatasetInput, type Review, type SearchEngine, type SearchParamsInput } from '@reviews/domain';
import { buildDataset, datasetWith, makeAnalysis, makeReview, SERVICES, TECHNICIANS, ulidOf } from './fixtures.js';

function engineFor(input: DatasetInput): SearchEngine {
  const document = buildReviewsDocument(input);
  return createSearchEngine(input, document.reviews, input.business, deriveInsights(input));
}

const search = (engine: SearchEngine, params: SearchParamsInput) => engine.search(SearchParams.parse(params));
const ids = (reviews: readonly Review[]) => reviews.map((review) => review.id);

/** Reference semantics, written as plainly as possible: filter everything, then sort. */
function naiveSearch(input: DatasetInput, params: SearchParams): { matched: number; ids: string[]; next_cursor: string | null } {
  const lower = (value: string) => value.toLowerCase();
  const technician = params.mentions_technician === undefined ? undefined : input.business.technicians.find((t) => [t.name, ...t.aliases].map(lower).includes(lower(params.mentions_technician as string)));
  const service = params.mentions_service === undefined ? undefined : input.business.services.find((s) => lower(s.id) === lower(params.mentions_service as string) || lower(s.label) === lower(params.mentions_service as string));
  const matching = input.reviews.filter((review) => {
    const analysis = input.analysis.per_review[review.id];
    if (params.rating !== undefined && review.rating !== params.rating) return false;
    if (params.min_rating !== undefined && review.rating < params.min_rating) return false;
    if (params.since !== undefined && review.date < params.since) return false;
    if (params.until !== undefined && review.date > params.until) return false;
    if (params.query !== undefined && (review.text === null || !lower(review.text).includes(lower(params.query)))) return false;
    if (params.mentions_technician !== undefined && (!technician || !analysis?.technicians.includes(technician.name))) return false;
    if (params.mentions_service !== undefined && (!service || !analysis?.services.includes(service.id))) return false;
    return true;
  });
  const sortKey = (review: Pick<Review, 'date' | 'id'>) => `${review.date}|${review.id}`;
  matching.sort((a, b) => (sortKey(a) < sortKey(b) ? 1 : -1));
  const cursor = params.cursor === undefined ? undefined : sortKey({ date: params.cursor.slice(0, 10), id: params.cursor.slice(11) });
  const rest = cursor === undefined ? matching : matching.filter((review) => sortKey(review) < cursor);
  const page = rest.slice(0, params.limit);
  const last = page[page.length - 1];
  return { matched: matching.length, ids: page.map((review) => review.id), next_cursor: rest.length > params.limit && last ? `${last.date}~${last.id}` : null };
}

describe('search engine on hand-written reviews', () => {
  const reviews = [
    makeReview(1, '2025-01-10', 5, 'Maggie was KIND and patient.'),
    makeReview(2, '2025-01-10', 4, 'Kindness from Dan at the café.'),
    makeReview(3, '2025-02-01', 3, null),
    makeReview(4, '2025-03-15', 2, 'Paperwork was slow.'),
    makeReview(5, '2025-03-15', 1, 'Unkind staff, slow paperwork.'),
  ];
  const input = datasetWith(reviews, {
    [ulidOf(1)]: makeAnalysis({ technicians: ['Margaret Ellis'], services: ['direct-cremation'] }),
    [ulidOf(2)]: makeAnalysis({ technicians: ['Daniel Okafor'], services: ['memorial-service'] }),
    [ulidOf(4)]: makeAnalysis({ technicians: ['Margaret Ellis'], services: ['memorial-service'] }),
  });
  const engine = engineFor(input);

  it('returns everything newest first, ties by id descending, with the default limit', () => {
    expect(search(engine, {})).toEqual({ matched: 5, returned: 5, reviews: [reviews[4], reviews[3], reviews[2], reviews[1], reviews[0]], next_cursor: null });
  });

  it('filters by exact rating and by minimum rating (inclusive, fractional)', () => {
    expect(ids(search(engine, { rating: 4 }).reviews)).toEqual([ulidOf(2)]);
    expect(ids(search(engine, { min_rating: 4 }).reviews)).toEqual([ulidOf(2), ulidOf(1)]);
    expect(ids(search(engine, { min_rating: 3.5 }).reviews)).toEqual([ulidOf(2), ulidOf(1)]);
    expect(ids(search(engine, { min_rating: 1 }).reviews)).toHaveLength(5);
  });

  it('includes both ends of since/until', () => {
    expect(ids(search(engine, { since: '2025-02-01', until: '2025-03-15' }).reviews)).toEqual([ulidOf(5), ulidOf(4), ulidOf(3)]);
    expect(ids(search(engine, { since: '2025-01-10', until: '2025-01-10' }).reviews)).toEqual([ulidOf(2), ulidOf(1)]);
    expect(search(engine, { since: '2025-03-16' })).toEqual({ matched: 0, returned: 0, reviews: [], next_cursor: null });
    expect(search(engine, { until: '2025-01-09' }).matched).toBe(0);
  });

  it('matches query as a case-insensitive substring of the text; rating-only reviews never match', () => {
    expect(ids(search(engine, { query: 'kind' }).reviews)).toEqual([ulidOf(5), ulidOf(2), ulidOf(1)]);
    expect(ids(search(engine, { query: 'SLOW PAPER' }).reviews)).toEqual([ulidOf(5)]);
    expect(ids(search(engine, { query: 'CAFÉ' }).reviews)).toEqual([ulidOf(2)]);
    expect(ids(search(engine, { query: 'a' }).reviews)).not.toContain(ulidOf(3));
    expect(search(engine, { query: 'was kind and patient. kindness' }).matched).toBe(0); // never across reviews
  });

  // toLowerCase() writes a capital sigma ending a word as ς: "ΟΔΟΣ" became "οδος", which "οδοστρωση" does not contain.
  it('matches Greek text whatever form of sigma either side ends a word with', () => {
    const greek = engineFor(datasetWith([makeReview(6, '2025-04-01', 5, 'Η ΟΔΟΣΤΡΩΣΗ ήταν καλή.'), makeReview(7, '2025-04-02', 5, 'Πολύ καλός.')]));
    for (const query of ['ΟΔΟΣ', 'οδος', 'οδοσ', 'ΟΔΟΣΤΡΩΣΗ']) expect({ query, found: ids(search(greek, { query }).reviews) }).toEqual({ query, found: [ulidOf(6)] });
    for (const query of ['ΚΑΛΌΣ', 'καλόσ', 'καλός.']) expect({ query, found: ids(search(greek, { query }).reviews) }).toEqual({ query, found: [ulidOf(7)] });
  });

  // The spec audit: "cafe" and a combining acute (as some keyboards and macOS file names send it) did not find "Café".
  it('matches canonically equivalent spellings, composed or decomposed, on either side', () => {
    const decomposed = engineFor(datasetWith([makeReview(8, '2025-04-01', 5, 'Coffee at the CAFE\u0301 after.'), makeReview(9, '2025-04-02', 5, 'No coffee.')]));
    for (const query of ['café', 'CAFÉ', 'cafe\u0301', 'CAFE\u0301 after']) {
      expect({ query, found: ids(search(engine, { query }).reviews) }).toEqual({ query, found: query.endsWith('after') ? [] : [ulidOf(2)] });
      expect({ query, found: ids(search(decomposed, { query }).reviews) }).toEqual({ query, found: [ulidOf(8)] });
    }
    expect(search(decomposed, { query: 'cafe after' }).matched).toBe(0); // an accent still counts
  });

  it('finds staff by canonical name or alias, case-insensitively, through the analysis', () => {
    for (const name of ['Margaret Ellis', 'maggie', 'MRS ELLIS']) expect(ids(search(engine, { mentions_technician: name }).reviews)).toEqual([ulidOf(4), ulidOf(1)]);
    expect(ids(search(engine, { mentions_technician: 'dan' }).reviews)).toEqual([ulidOf(2)]);
    expect(search(engine, { mentions_technician: 'Rosa Delgado' }).matched).toBe(0);
  });

  it('matches canonically equivalent spellings through the trigram index too (over 1,000 texts)', () => {
    const filler = Array.from({ length: 1200 }, (_, n) => makeReview(100 + n, '2025-01-01', 4, `Kind staff, visit ${n}.`));
    const large = engineFor(datasetWith([...filler, makeReview(20, '2025-04-01', 5, 'Coffee at the CAFE\u0301 after.'), makeReview(21, '2025-04-02', 5, 'Le café était bon.')]));
    for (const query of ['café', 'CAFE\u0301', 'cafe\u0301 after']) {
      expect({ query, found: ids(search(large, { query }).reviews) }).toEqual({ query, found: query.endsWith('after') ? [ulidOf(20)] : [ulidOf(21), ulidOf(20)] });
    }
  });

  it('finds staff and services whose names are spelled decomposed in the dataset by their composed spelling, and back', () => {
    const input = datasetWith([makeReview(10, '2025-04-01', 5, 'Thank you.')], { [ulidOf(10)]: makeAnalysis({ technicians: ['Jose\u0301 Nu\u0301n\u0303ez'], services: ['velorio'] }) });
    input.business.technicians.push({ name: 'Jose\u0301 Nu\u0301n\u0303ez', role: 'Funeral director', aliases: ['Pepé'] });
    input.business.services.push({ id: 'velorio', label: 'Velorio en capilla de Peñalba' });
    const accented = engineFor(input);
    for (const name of ['José Núñez', 'JOSÉ NÚÑEZ', 'Jose\u0301 Nu\u0301n\u0303ez', 'pepe\u0301']) expect({ name, found: ids(search(accented, { mentions_technician: name }).reviews) }).toEqual({ name, found: [ulidOf(10)] });
    expect(ids(search(accented, { mentions_service: 'velorio en capilla de pen\u0303alba' }).reviews)).toEqual([ulidOf(10)]);
    expect(accented.technician('José Núñez')?.name).toBe('Jose\u0301 Nu\u0301n\u0303ez');
  });

  it('finds services by id or label, case-insensitively', () => {
    for (const service of ['memorial-service', 'Memorial Service', 'MEMORIAL-SERVICE']) expect(ids(search(engine, { mentions_service: service }).reviews)).toEqual([ulidOf(4), ulidOf(2)]);
  });

  it('answers an unknown staff member or service with an empty result, not an error', () => {
    expect(search(engine, { mentions_technician: 'Nobody' })).toEqual({ matched: 0, returned: 0, reviews: [], next_cursor: null });
    expect(search(engine, { mentions_service: 'embalming' })).toEqual({ matched: 0, returned: 0, reviews: [], next_cursor: null });
  });

  it('combines filters with AND', () => {
    expect(ids(search(engine, { mentions_technician: 'maggie', mentions_service: 'memorial-service' }).reviews)).toEqual([ulidOf(4)]);
    expect(ids(search(engine, { mentions_technician: 'maggie', query: 'kind', min_rating: 5, since: '2025-01-10' }).reviews)).toEqual([ulidOf(1)]);
    expect(search(engine, { rating: 3, min_rating: 4 }).matched).toBe(0);
  });

  it('caps returned at limit while matched counts every match', () => {
    expect(search(engine, { limit: 2 })).toEqual({ matched: 5, returned: 2, reviews: [reviews[4], reviews[3]], next_cursor: `2025-03-15~${ulidOf(4)}` });
    expect(search(engine, { query: 'kind', limit: 1 })).toMatchObject({ matched: 3, returned: 1, reviews: [reviews[4]] });
    expect(search(engine, { mentions_technician: 'maggie', limit: 1 })).toMatchObject({ matched: 2, returned: 1 });
  });

  it('pages with next_cursor: each page starts after the last review of the one before, matched counts them all', () => {
    const first = search(engine, { limit: 2 });
    const second = search(engine, { limit: 2, cursor: first.next_cursor! });
    expect(second).toEqual({ matched: 5, returned: 2, reviews: [reviews[2], reviews[1]], next_cursor: `2025-01-10~${ulidOf(2)}` });
    expect(search(engine, { limit: 2, cursor: second.next_cursor! })).toEqual({ matched: 5, returned: 1, reviews: [reviews[0]], next_cursor: null });
    // Filtered: the cursor of a page counts only the matches after it.
    const kind = search(engine, { query: 'kind', limit: 2 });
    expect([ids(kind.reviews), kind.next_cursor]).toEqual([[ulidOf(5), ulidOf(2)], `2025-01-10~${ulidOf(2)}`]);
    expect(search(engine, { query: 'kind', limit: 2, cursor: kind.next_cursor! })).toEqual({ matched: 3, returned: 1, reviews: [reviews[0]], next_cursor: null });
    // A last page of exactly `limit` matches says so.
    expect(search(engine, { limit: 5 }).next_cursor).toBeNull();
    expect(search(engine, { query: 'kind', limit: 3 }).next_cursor).toBeNull();
  });

  it('continues after a cursor whose review is gone, or that no review had, by its place in the order', () => {
    // Between the two reviews of 2025-03-15 and those of 2025-01-10, none of them named.
    expect(ids(search(engine, { cursor: `2025-02-01~${ulidOf(9)}` }).reviews)).toEqual([ulidOf(3), ulidOf(2), ulidOf(1)]);
    expect(ids(search(engine, { cursor: `2030-01-01~${ulidOf(1)}`, limit: 1 }).reviews)).toEqual([ulidOf(5)]);
    expect(search(engine, { cursor: `2000-01-01~${ulidOf(1)}` })).toEqual({ matched: 5, returned: 0, reviews: [], next_cursor: null });
  });

  it('lists reviews since a date, inclusive, newest first', () => {
    expect(engine.since('2025-03-15')).toEqual({ since: '2025-03-15', matched: 2, reviews: [reviews[4], reviews[3]] });
    expect(engine.since('2000-01-01').matched).toBe(5);
    expect(engine.since('2030-01-01')).toEqual({ since: '2030-01-01', matched: 0, reviews: [] });
  });

  it('looks up reviews, staff and services', () => {
    expect(engine.review(ulidOf(3))).toBe(reviews[2]);
    expect(engine.review(ulidOf(9))).toBeUndefined();
    expect(engine.technician('MAGGIE')).toEqual(TECHNICIANS[0]);
    expect(engine.technician('Maggi')).toBeUndefined();
    expect(engine.service('direct CREMATION')).toEqual(SERVICES[0]);
    expect(engine.service('Direct-Cremation')).toEqual(SERVICES[0]);
  });

  it('works on an empty dataset', () => {
    const empty = engineFor(datasetWith([]));
    expect(search(empty, { query: 'kind', since: '2025-01-01' })).toEqual({ matched: 0, returned: 0, reviews: [], next_cursor: null });
    expect(empty.since('2025-01-01')).toEqual({ since: '2025-01-01', matched: 0, reviews: [] });
  });
});

describe('search engine agrees with a naive filter-and-sort', () => {
  // Over 1,000 reviews, so both query strategies run: testing texts one by one (narrow candidates)
  // and the trigram index (wide ones).
  const input = buildDataset({ reviews: 2500, seed: 11 });
  const engine = engineFor(input);
  const texts = input.reviews.flatMap((review) => (review.text === null ? [] : [review.text]));
  const dates = [...new Set(input.reviews.map((review) => review.date))].sort();

  // Each parameter is absent 2 times in 3, so single filters and the unfiltered query path are common.
  const optional = <T>(arbitrary: fc.Arbitrary<T>) => fc.oneof({ arbitrary: fc.constant(undefined), weight: 2 }, { arbitrary, weight: 1 });
  const randomCase = (text: string, flips: number[]) => [...text].map((c, i) => (flips[i % flips.length] === 1 ? c.toUpperCase() : c.toLowerCase())).join('');
  const textQuery = fc
    .tuple(fc.constantFrom(...texts), fc.nat(), fc.integer({ min: 1, max: 14 }), fc.array(fc.integer({ min: 0, max: 1 }), { minLength: 1, maxLength: 4 }))
    .map(([text, start, length, flips]) => randomCase(text.slice(start % text.length, (start % text.length) + length), flips))
    .filter((query) => query.length > 0);
  const words = [...new Set(texts.flatMap((text) => text.split(' ')))];
  // Two words that each occur often but rarely side by side: their trigrams give candidates that are not matches.
  const wordPair = fc.tuple(fc.constantFrom(...words), fc.constantFrom(...words)).map(([a, b]) => `${a} ${b}`.toUpperCase());
  const date = fc.oneof(fc.constantFrom(...dates), fc.constantFrom('2023-06-30', '2024-02-29', '2026-01-01'));
  const names = [...TECHNICIANS.flatMap((t) => [t.name, ...t.aliases]), 'nobody'];
  const services = [...SERVICES.flatMap((s) => [s.id, s.label]), 'embalming'];

  const params = fc.record(
    {
      rating: optional(fc.integer({ min: 1, max: 5 })),
      min_rating: optional(fc.oneof(fc.integer({ min: 1, max: 5 }), fc.double({ min: 1, max: 5, noNaN: true }))),
      since: optional(date),
      until: optional(date),
      query: optional(fc.oneof(textQuery, wordPair, fc.string({ minLength: 1, maxLength: 4 }))),
      mentions_technician: optional(fc.constantFrom(...names).map((name) => name.toUpperCase())),
      mentions_service: optional(fc.constantFrom(...services)),
      limit: optional(fc.integer({ min: 1, max: 100 })),
      // A review's own place, or one between reviews (an id no review has).
      cursor: optional(fc.oneof(fc.constantFrom(...input.reviews).map((review) => `${review.date}~${review.id}`), fc.tuple(date, fc.constantFrom(...input.reviews)).map(([day, review]) => `${day}~${review.id}`))),
    },
    { requiredKeys: [] },
  );

  it('for random parameter combinations (including repeated queries)', () => {
    fc.assert(
      fc.property(params, (raw) => {
        const parsed = SearchParams.safeParse(raw);
        fc.pre(parsed.success);
        if (!parsed.success) return;
        const result = engine.search(parsed.data);
        const expected = naiveSearch(input, parsed.data);
        expect({ matched: result.matched, ids: ids(result.reviews), next_cursor: result.next_cursor }).toEqual(expected);
        expect(result.returned).toBe(result.reviews.length);
      }),
      { numRuns: 400, seed: 20261121 },
    );
  });

  it('pages through every match once, in order, by following next_cursor', () => {
    fc.assert(
      fc.property(params, fc.integer({ min: 1, max: 100 }), (raw, limit) => {
        const parsed = SearchParams.safeParse({ ...raw, cursor: undefined, limit });
        fc.pre(parsed.success);
        if (!parsed.success) return;
        const all = naiveSearch(input, { ...parsed.data, limit: input.reviews.length });
        const paged: string[] = [];
        let result = engine.search(parsed.data);
        // Bounded: a cursor that went nowhere would page forever.
        for (let pages = 1; pages <= Math.ceil(all.matched / limit) + 1; pages += 1) {
          expect(result.matched).toBe(all.matched);
          paged.push(...ids(result.reviews));
          if (result.next_cursor === null) break;
          expect(result.returned).toBe(limit);
          result = engine.search({ ...parsed.data, cursor: result.next_cursor });
        }
        expect([paged, result.next_cursor]).toEqual([all.ids, null]);
      }),
      { numRuns: 150, seed: 20261128 },
    );
  });
});
