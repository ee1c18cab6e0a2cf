import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import request from 'supertest';
import { keepUnchangedRepresentations, type Review } from '@reviews/domain';
import { BASE_URL, close, decoded, expectEnvelope, listen, PUBLISHED_AT, rawRequest, snapshotOf, startTestApi, type TestApi } from './helpers.js';
import { buildDataset, SERVICES, TECHNICIANS } from '../../../libs/domain/test/fixtures.js';

let api: TestApi;
let url: string;
let all: Review[];

beforeAll(async () => {
  api = startTestApi();
  all = api.snapshot.reviewsDocument.reviews;
  url = await listen(api.server);
});
afterAll(() => close(api.server));

interface SearchBody {
  matched: number;
  returned: number;
  reviews: Review[];
  next_cursor: string | null;
}

async function search(query: string): Promise<SearchBody> {
  const res = await request(url).get(`/api/reviews/search${query}`);
  expect(res.status).toBe(200);
  expect(res.headers['content-type']).toBe('application/json');
  return res.body as SearchBody;
}

const mentions = (review: Review) => api.snapshot.insightsDocument.per_review[review.id];
const newestFirst = (reviews: Review[]) => reviews.map((r) => `${r.date}|${r.id}`);

describe('GET /api/reviews/search', () => {
  it('without parameters returns the 20 newest of all reviews', async () => {
    const body = await search('');
    expect(body.matched).toBe(all.length);
    expect(body.returned).toBe(20);
    expect(body.reviews).toEqual(all.slice(0, 20));
  });

  it.each([1, 2, 3, 4, 5])('rating=%i matches that exact rating', async (rating) => {
    const expected = all.filter((r) => r.rating === rating);
    const body = await search(`?rating=${rating}&limit=100`);
    expect(body.matched).toBe(expected.length);
    expect(body.reviews).toEqual(expected.slice(0, 100));
  });

  it.each(['1', '2.5', '4', '5'])('min_rating=%s is inclusive', async (min) => {
    const expected = all.filter((r) => r.rating >= Number(min));
    const body = await search(`?min_rating=${min}&limit=100`);
    expect(body.matched).toBe(expected.length);
    expect(body.reviews.every((r) => r.rating >= Number(min))).toBe(true);
  });

  it('since and until are inclusive and combine', async () => {
    const since = '2024-06-01';
    const until = '2024-12-15';
    const expected = all.filter((r) => r.date >= since && r.date <= until);
    const body = await search(`?since=${since}&until=${until}&limit=100`);
    expect(body.matched).toBe(expected.length);
    expect(body.reviews).toEqual(expected);
    const onDay = all[5]!.date;
    const day = await search(`?since=${onDay}&until=${onDay}&limit=100`);
    expect(day.reviews.map((r) => r.date)).toEqual(all.filter((r) => r.date === onDay).map((r) => r.date));
  });

  it('query is a case-insensitive substring of the text; rating-only reviews never match', async () => {
    const expected = all.filter((r) => r.text?.toLowerCase().includes('kind'));
    const body = await search('?query=KiNd&limit=100');
    expect(body.matched).toBe(expected.length);
    expect(body.reviews).toEqual(expected);
    expect((await search(`?query=${encodeURIComponent('café')}&limit=100`)).matched).toBe(all.filter((r) => r.text?.toLowerCase().includes('café')).length);
  });

  it('mentions_technician matches by name or alias, case-insensitively', async () => {
    const name = TECHNICIANS[0]!.name;
    const expected = all.filter((r) => mentions(r)?.technicians.includes(name));
    expect(expected.length).toBeGreaterThan(0);
    for (const key of [name, name.toUpperCase(), TECHNICIANS[0]!.aliases[0]!]) {
      const body = await search(`?mentions_technician=${encodeURIComponent(key)}&limit=100`);
      expect(body.reviews).toEqual(expected);
    }
    expect((await search('?mentions_technician=Nobody')).matched).toBe(0);
  });

  it('mentions_service matches by id or label', async () => {
    const service = SERVICES[0]!;
    const expected = all.filter((r) => mentions(r)?.services.includes(service.id));
    expect(expected.length).toBeGreaterThan(0);
    for (const key of [service.id, service.label]) {
      const body = await search(`?mentions_service=${encodeURIComponent(key)}&limit=100`);
      expect(body.reviews).toEqual(expected);
    }
  });

  it('filters combine with AND, results are newest first (date, then id)', async () => {
    const expected = all.filter((r) => r.rating >= 4 && r.date >= '2024-03-01' && r.text !== null && r.text.toLowerCase().includes('the'));
    const body = await search('?min_rating=4&since=2024-03-01&query=the&limit=100');
    expect(body.reviews).toEqual(expected);
    expect(newestFirst(body.reviews)).toEqual([...newestFirst(body.reviews)].sort().reverse());
  });

  it('limit bounds the page, matched counts everything', async () => {
    expect((await search('?limit=1')).reviews).toHaveLength(1);
    const body = await search('?limit=100');
    expect(body.returned).toBe(100);
    expect(body.matched).toBe(all.length);
  });

  it('pages through every match by next_cursor, which a query string carries as it is', async () => {
    const expected = all.filter((r) => r.rating >= 4);
    const paged: Review[] = [];
    let body = await search('?min_rating=4&limit=7');
    for (let pages = 1; pages <= Math.ceil(expected.length / 7) + 1 && body.next_cursor !== null; pages += 1) {
      expect(body.matched).toBe(expected.length);
      paged.push(...body.reviews);
      body = await search(`?min_rating=4&limit=7&cursor=${body.next_cursor}`);
    }
    paged.push(...body.reviews);
    expect([paged, body.next_cursor]).toEqual([expected, null]);
    expect(expected.length).toBeGreaterThan(14);
  });

  it('links each page but the last to the next (RFC 8288 rel="next"), which a generic client follows to the end', async () => {
    const expected = all.filter((r) => r.rating >= 4);
    const paged: Review[] = [];
    let next: string | undefined = `${BASE_URL}/api/reviews/search?min_rating=4&limit=7`;
    for (let pages = 0; next !== undefined && pages <= Math.ceil(expected.length / 7); pages += 1) {
      expect(next.startsWith(`${BASE_URL}/api/reviews/search?`)).toBe(true);
      const res = await request(url).get(next.slice(BASE_URL.length));
      paged.push(...(res.body as SearchBody).reviews);
      const link = res.headers['link'] as string | undefined;
      expect(link === undefined).toBe((res.body as SearchBody).next_cursor === null);
      next = link === undefined ? undefined : /^<([^>]+)>; rel="next"$/.exec(link)?.[1];
    }
    expect([next, paged]).toEqual([undefined, expected]);
    // A revalidated page keeps its link.
    const first = await request(url).get('/api/reviews/search?min_rating=4&limit=7');
    const revalidated = await request(url).get('/api/reviews/search?limit=7&min_rating=4').set('If-None-Match', first.headers['etag'] as string);
    expect([revalidated.status, revalidated.headers['link']]).toEqual([304, first.headers['link']]);
  });

  it('no match is 200 with an empty list', async () => {
    expect(await search('?query=zzzzzzzz')).toEqual({ matched: 0, returned: 0, reviews: [], next_cursor: null });
  });

  it.each([
    ['rating=0', 'rating'],
    ['rating=6', 'rating'],
    ['rating=4.5', 'rating'],
    ['rating=abc', 'rating'],
    ['rating=', 'rating'],
    ['min_rating=0.9', 'min_rating'],
    ['min_rating=5.1', 'min_rating'],
    ['min_rating=x', 'min_rating'],
    ['since=2025-02-30', 'since'],
    ['since=2025-1-1', 'since'],
    ['until=yesterday', 'until'],
    ['since=2025-02-01&until=2025-01-01', 'until'],
    ['limit=0', 'limit'],
    ['limit=101', 'limit'],
    ['limit=1.5', 'limit'],
    ['limit=-1', 'limit'],
    [`query=${'a'.repeat(201)}`, 'query'],
    ['colour=blue', 'colour'],
    ['rating=5&rating=4', 'rating'],
    ['?rating=5', '?rating'],
    ['cursor=', 'cursor'],
    ['cursor=2025-01-01', 'cursor'],
    ['cursor=2025-02-30~01HZX3K9QW8E5R7T2Y4V6J8M0P', 'cursor'],
    ['cursor=2025-01-01~01hzx3k9qw8e5r7t2y4v6j8m0p', 'cursor'],
    ['cursor=2025-01-01%7E01HZX3K9QW8E5R7T2Y4V6J8M0PX', 'cursor'],
  ])('%s -> 400 with an issue naming %s', async (query, parameter) => {
    const body = expectEnvelope(await request(url).get(`/api/reviews/search?${query}`), 400);
    expect(body.issues?.length).toBeGreaterThan(0);
    expect(body.issues?.some((issue) => issue.path[0] === parameter)).toBe(true);
  });

  it('results carry an ETag and revalidate to 304', async () => {
    const first = await request(url).get('/api/reviews/search?rating=5&limit=3');
    const etag = first.headers['etag'] as string;
    expect(etag).toMatch(/^"/);
    expect(first.headers['last-modified']).toBe(PUBLISHED_AT.toUTCString());
    const reordered = await request(url).get('/api/reviews/search?limit=3&rating=5').set('If-None-Match', etag);
    expect(reordered.status).toBe(304);
    expect(reordered.text ?? '').toBe('');
  });

  // Results depend on insights.json too (the per-review analysis behind mentions_technician): a
  // version changing only the analysis keeps reviews.json's date, and must still move the results'.
  it('dates results by insights.json too: If-Modified-Since is not 304 after only the analysis changed', async () => {
    const name = TECHNICIANS[2]!.name;
    const query = `/api/reviews/search?mentions_technician=${encodeURIComponent(name)}&limit=100`;
    const before = await request(url).get(query);
    expect(before.headers['last-modified']).toBe(PUBLISHED_AT.toUTCString());
    const input = buildDataset({ reviews: 120, seed: 11 });
    const unmentioned = input.reviews.find((r) => input.analysis?.per_review[r.id] && !input.analysis.per_review[r.id]!.technicians.includes(name))!;
    const analysis = input.analysis!;
    const perReview = { ...analysis.per_review, [unmentioned.id]: { ...analysis.per_review[unmentioned.id]!, technicians: [name] } };
    const later = snapshotOf({ ...input, analysis: { ...analysis, per_review: perReview } }, new Date('2025-08-01T00:00:00Z'));
    // As the follower swaps it in: reviews.json's bytes, so its representation and date, are the served ones.
    const representations = keepUnchangedRepresentations(later.representations, api.snapshot.representations);
    expect(representations.reviews).toBe(api.snapshot.representations.reviews);
    expect(representations.insights.lastModified).toBe('Fri, 01 Aug 2025 00:00:00 GMT');
    api.serve({ ...later, representations, topic: (topic) => representations[topic] });
    try {
      const after = await request(url).get(query).set('If-Modified-Since', PUBLISHED_AT.toUTCString());
      expect(after.status).toBe(200);
      expect(after.headers['last-modified']).toBe('Fri, 01 Aug 2025 00:00:00 GMT');
      expect((after.body as SearchBody).matched).toBe((before.body as SearchBody).matched + 1);
      expect((await request(url).get(query).set('If-Modified-Since', 'Fri, 01 Aug 2025 00:00:00 GMT')).status).toBe(304);
    } finally {
      api.serve(api.snapshot);
    }
  });

  it('HEAD answers headers only', async () => {
    const res = await request(url).head('/api/reviews/search?rating=5');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/json');
    expect(Number(res.headers['content-length'])).toBeGreaterThan(0);
  });

  it('compresses a result for the coding each request negotiates, with one stable ETag per coding', async () => {
    // Fresh queries: each first request below is a cache miss for its coding.
    const path = '/api/reviews/search?min_rating=2&limit=40';
    const headFirst = await request(url).head(path).set('Accept-Encoding', 'br');
    const br = await rawRequest(url, path, { 'Accept-Encoding': 'gzip, br' });
    const gzip = await rawRequest(url, path, { 'Accept-Encoding': 'gzip' });
    const plain = await rawRequest(url, path, { 'Accept-Encoding': 'identity' });
    expect([br.headers['content-encoding'], gzip.headers['content-encoding'], plain.headers['content-encoding']]).toEqual(['br', 'gzip', undefined]);
    expect(headFirst.headers['content-length']).toBe(br.headers['content-length']);
    const etag = plain.headers['etag'] as string;
    expect(br.headers['etag']).toBe(`${etag.slice(0, -1)}-br"`);
    expect(gzip.headers['etag']).toBe(`${etag.slice(0, -1)}-gz"`);
    for (const res of [br, gzip]) expect(decoded(res).equals(plain.body)).toBe(true);
    // On two lines (a cache may key on the first alone), the result goes out unencoded.
    expect((await rawRequest(url, path, { 'Accept-Encoding': ['gzip', 'br'] })).headers['content-encoding']).toBeUndefined();
    const again = await rawRequest(url, path, { 'Accept-Encoding': 'gzip' });
    expect(again.body.equals(gzip.body)).toBe(true);
    const revalidated = await rawRequest(url, '/api/reviews/search?min_rating=3&limit=40', { 'Accept-Encoding': 'gzip', 'If-None-Match': '"x"' });
    const notModified = await rawRequest(url, '/api/reviews/search?limit=40&min_rating=3', { 'Accept-Encoding': 'gzip', 'If-None-Match': revalidated.headers['etag'] as string });
    expect([revalidated.status, notModified.status]).toEqual([200, 304]);
  });

  it('405 for POST', async () => {
    const res = await request(url).post('/api/reviews/search').send({ rating: 5 });
    expectEnvelope(res, 405, 'method_not_allowed');
    expect(res.headers['allow']).toBe('GET, HEAD, OPTIONS');
  });
});

describe('GET /api/reviews/since/:date', () => {
  it('returns { since, matched, reviews } with reviews on or after the date, newest first', async () => {
    const date = '2025-01-01';
    const expected = all.filter((r) => r.date >= date);
    const res = await request(url).get(`/api/reviews/since/${date}`);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/json');
    expect(res.body).toEqual({ since: date, matched: expected.length, reviews: expected });
  });

  it('a date after every review gives an empty list', async () => {
    expect((await request(url).get('/api/reviews/since/2099-01-01')).body).toEqual({ since: '2099-01-01', matched: 0, reviews: [] });
  });

  it.each(['2025-02-30', '2025-13-01', '2025-1-1', 'yesterday', '20250101', '2025-01-01T00:00:00Z', '%FF', '%C0%AF', '%E0%A4'])('%s -> 400 invalid_date naming the date', async (date) => {
    const body = expectEnvelope(await request(url).get(`/api/reviews/since/${date}`), 400, 'invalid_date');
    expect(body.issues?.[0]?.path).toEqual(['date']);
  });

  it('query parameters are refused, each named, rather than silently ignored', async () => {
    const body = expectEnvelope(await request(url).get('/api/reviews/since/2025-01-01?limit=1&foo'), 400, 'invalid_query');
    expect(body.issues?.map((issue) => issue.path)).toEqual([['limit'], ['foo']]);
  });

  it.each([
    ['2025-02-30?limit=1&foo', 'must be a real calendar date'],
    ['%FF?limit=1&foo', 'not valid percent-encoded UTF-8'],
  ])('an invalid date sent with query parameters (%s) -> one 400 listing the date and each parameter', async (target, dateProblem) => {
    const body = expectEnvelope(await request(url).get(`/api/reviews/since/${target}`), 400, 'invalid_date');
    expect(body.issues?.map((issue) => issue.path)).toEqual([['date'], ['limit'], ['foo']]);
    expect(body.issues?.[0]?.message).toContain(dateProblem);
    expect(body.message).toContain('takes no query parameters');
  });

  it('a "%" without two hex digits is a malformed request target -> 400 bad_request', async () => {
    expectEnvelope(await request(url).get('/api/reviews/since/%E0%A4%A'), 400, 'bad_request');
    expectEnvelope(await request(url).get('/api/reviews/since/%zz'), 400, 'bad_request');
  });

  it('percent-encoded unreserved characters are the characters themselves (RFC 3986 §6.2.2.2)', async () => {
    expect((await request(url).get('/api/reviews/since/%32025-01-01')).body).toMatchObject({ since: '2025-01-01' });
    expect((await request(url).get('/reviews%2Ejson')).status).toBe(200);
  });

  it('supports If-None-Match and If-Modified-Since', async () => {
    const first = await request(url).get('/api/reviews/since/2024-06-01');
    const etag = first.headers['etag'] as string;
    expect(first.headers['last-modified']).toBe(PUBLISHED_AT.toUTCString());
    expect((await request(url).get('/api/reviews/since/2024-06-01').set('If-None-Match', etag)).status).toBe(304);
    expect((await request(url).get('/api/reviews/since/2024-06-01').set('If-None-Match', `W/${etag}, "x"`)).status).toBe(304);
    expect((await request(url).get('/api/reviews/since/2024-06-01').set('If-Modified-Since', PUBLISHED_AT.toUTCString())).status).toBe(304);
    expect((await request(url).get('/api/reviews/since/2024-06-02').set('If-None-Match', etag)).status).toBe(200);
  });

  it('a new dataset version changes the ETag', async () => {
    const before = (await request(url).get('/api/reviews/since/2024-06-01')).headers['etag'];
    api.serve(snapshotOf(buildDataset({ reviews: 60, seed: 99 }), new Date('2025-08-01T00:00:00Z')));
    try {
      const after = await request(url).get('/api/reviews/since/2024-06-01');
      expect(after.headers['etag']).not.toBe(before);
      expect(after.headers['last-modified']).toBe('Fri, 01 Aug 2025 00:00:00 GMT');
    } finally {
      api.serve(api.snapshot);
    }
  });
});
