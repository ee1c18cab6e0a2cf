import { request as httpRequest, type IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { READ_ENDPOINTS, send, startStandalone, type RawResponse, type Standalone } from './harness.js';

/**
 * Interface spec §1, §4.1–4.5, §4.8, §7 and design card §4 against the running standalone, checked
 * the way a standards-based client sees them (RFC 9110: conditional requests §13, HEAD §9.3.2,
 * 304 §15.4.5, 405 §15.5.6, content codings §8.4/§12.5.3, Vary §12.5.5).
 */
let server: Standalone;
let base: string;
beforeAll(async () => {
  server = await startStandalone();
  base = server.baseUrl;
}, 30_000);
afterAll(() => server.stop());

const get = (path: string, headers: Record<string, string> = {}) => send('GET', `${base}${path}`, headers);

const STRONG_ETAG = /^"[\x21\x23-\x7e]+"$/;

function expectValidatorHeaders(res: RawResponse): void {
  expect(res.headers['etag']).toMatch(STRONG_ETAG);
  expect(new Date(res.headers['last-modified'] ?? '').toUTCString()).toBe(res.headers['last-modified']);
  expect(res.headers['cache-control']).toBeTruthy();
  expect(res.headers['vary']).toBe('Accept-Encoding');
}

describe.each(READ_ENDPOINTS)('GET $path', ({ path, contentType, topic }) => {
  it(`is 200 with Content-Type exactly ${contentType}, a strong quoted ETag, Last-Modified, Cache-Control, Vary and a correct Content-Length`, async () => {
    const res = await get(path);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe(contentType);
    expectValidatorHeaders(res);
    expect(res.headers['content-encoding']).toBeUndefined();
    expect(Number(res.headers['content-length'])).toBe(res.body.length);
    if (contentType === 'application/json') expect(() => res.json()).not.toThrow();
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.headers['access-control-expose-headers']).toEqual(expect.stringContaining('ETag'));
  });

  it(topic ? 'advertises the hub and itself in Link (WebSub §4)' : 'is not a topic: no hub Link', async () => {
    const res = await get(path);
    if (topic) {
      const self = `${base}${path}`;
      expect(res.headers['link']).toBe(`<${base}/api/websub/hub>; rel="hub", <${self}>; rel="self"`);
    } else {
      // A search page may link its next one (rel="next"), never a hub.
      expect(res.headers['link'] ?? '').not.toMatch(/rel="(hub|self)"/);
    }
  });

  it('HEAD has the same status and headers as GET and no body', async () => {
    const [getRes, headRes] = [await get(path), await send('HEAD', `${base}${path}`)];
    expect(headRes.status).toBe(200);
    expect(headRes.body.length).toBe(0);
    for (const name of ['content-type', 'content-length', 'etag', 'last-modified', 'cache-control', 'vary', 'link']) {
      expect([name, headRes.headers[name]]).toEqual([name, getRes.headers[name]]);
    }
  });

  it('If-None-Match with the ETag (also weak, in a list, or *) is 304 with no body, ETag, Vary and Cache-Control', async () => {
    const first = await get(path);
    const etag = first.headers['etag'] as string;
    for (const inm of [etag, `W/${etag}`, `"nope", ${etag}`, '*']) {
      const res = await get(path, { 'If-None-Match': inm });
      expect([inm, res.status]).toEqual([inm, 304]);
      expect(res.body.length).toBe(0);
      expect(res.headers['etag']).toBe(etag);
      expect(res.headers['vary']).toBe('Accept-Encoding');
      expect(res.headers['cache-control']).toBe(first.headers['cache-control']);
      expect(res.headers['content-type']).toBeUndefined();
      expect(res.headers['last-modified']).toBeUndefined();
    }
    const head = await send('HEAD', `${base}${path}`, { 'If-None-Match': etag });
    expect(head.status).toBe(304);
  });

  it('If-None-Match takes precedence over If-Modified-Since (RFC 9110 §13.2.2)', async () => {
    const first = await get(path);
    const lastModified = first.headers['last-modified'] as string;
    // A non-matching tag means 200 even though the date alone would give 304.
    expect((await get(path, { 'If-None-Match': '"other"', 'If-Modified-Since': lastModified })).status).toBe(200);
    // A matching tag means 304 even though the date alone would give 200.
    expect((await get(path, { 'If-None-Match': first.headers['etag'] as string, 'If-Modified-Since': 'Thu, 01 Jan 1970 00:00:00 GMT' })).status).toBe(304);
  });

  it('If-Match / If-Unmodified-Since that do not hold are 412 JSON, evaluated before If-None-Match (RFC 9110 §13.2.2)', async () => {
    const first = await get(path);
    const etag = first.headers['etag'] as string;
    const lastModified = first.headers['last-modified'] as string;
    const earlier = new Date(Date.parse(lastModified) - 1000).toUTCString();
    for (const headers of [{ 'If-Match': '"other"' }, { 'If-Match': `W/${etag}` }, { 'If-Unmodified-Since': earlier }, { 'If-Match': '"other"', 'If-None-Match': etag }]) {
      const res = await get(path, headers);
      expect([headers, res.status]).toEqual([headers, 412]);
      expect(res.headers['content-type']).toBe('application/json');
    }
    for (const headers of [{ 'If-Match': etag }, { 'If-Match': '*' }, { 'If-Unmodified-Since': lastModified }, { 'If-Match': etag, 'If-Unmodified-Since': earlier }]) {
      expect([headers, (await get(path, headers)).status]).toEqual([headers, 200]);
    }
    expect((await get(path, { 'If-Match': etag, 'If-None-Match': etag })).status).toBe(304);
  });

  it('If-Modified-Since alone: 304 at or after Last-Modified, 200 before it, ignored when not an HTTP-date', async () => {
    const first = await get(path);
    const lastModified = first.headers['last-modified'] as string;
    expect((await get(path, { 'If-Modified-Since': lastModified })).status).toBe(304);
    const earlier = new Date(Date.parse(lastModified) - 1000).toUTCString();
    expect((await get(path, { 'If-Modified-Since': earlier })).status).toBe(200);
    expect((await get(path, { 'If-Modified-Since': 'yesterday' })).status).toBe(200);
  });

  it('gzip and br variants decode to the identity bytes, each with its own strong ETag and an exact Content-Length', async () => {
    const identity = await get(path);
    const etags = new Set([identity.headers['etag']]);
    for (const [coding, decode] of [
      ['gzip', gunzipSync],
      ['br', brotliDecompressSync],
    ] as const) {
      const res = await get(path, { 'Accept-Encoding': coding });
      expect(res.headers['content-encoding']).toBe(coding);
      expect(res.headers['content-type']).toBe(identity.headers['content-type']);
      expect(res.headers['vary']).toBe('Accept-Encoding');
      expect(Number(res.headers['content-length'])).toBe(res.body.length);
      expect(decode(res.body).equals(identity.body)).toBe(true);
      expect(res.headers['etag']).toMatch(STRONG_ETAG);
      etags.add(res.headers['etag']);
      // The variant's own ETag revalidates the variant.
      expect((await get(path, { 'Accept-Encoding': coding, 'If-None-Match': res.headers['etag'] as string })).status).toBe(304);
      const head = await send('HEAD', `${base}${path}`, { 'Accept-Encoding': coding });
      expect(head.headers['content-length']).toBe(res.headers['content-length']);
    }
    expect(etags.size).toBe(3);
  });
});

describe.each(READ_ENDPOINTS)('byte ranges of GET $path (RFC 9110 §14, §13.1.5, §15.3.7, §15.5.17)', ({ path, contentType }) => {
  it.each(['identity', 'gzip', 'br'])('a single range of the %s variant is 206 with its bytes, Content-Range and the 200\'s validators', async (coding) => {
    const whole = await get(path, { 'Accept-Encoding': coding });
    expect(whole.headers['accept-ranges']).toBe('bytes');
    const length = whole.body.length;
    for (const [range, first, last] of [
      ['bytes=0-9', 0, 9],
      [`bytes=${length - 5}-`, length - 5, length - 1],
      ['bytes=-7', length - 7, length - 1],
      [`bytes=10-${length + 1000}`, 10, length - 1],
      ['bytes=20-29, 0-19', 0, 29],
    ] as const) {
      const res = await get(path, { 'Accept-Encoding': coding, Range: range });
      expect([range, res.status, res.headers['content-range']]).toEqual([range, 206, `bytes ${first}-${last}/${length}`]);
      expect(res.body.equals(whole.body.subarray(first, last + 1))).toBe(true);
      expect(Number(res.headers['content-length'])).toBe(last - first + 1);
      for (const name of ['etag', 'last-modified', 'cache-control', 'vary', 'content-type', 'content-encoding', 'link']) {
        expect([name, res.headers[name]]).toEqual([name, whole.headers[name]]);
      }
      expect(res.headers['content-type']).toBe(contentType);
    }
  });

  it('a range starting past the end is 416 with the length in Content-Range and the JSON envelope', async () => {
    const length = (await get(path, { 'Accept-Encoding': 'gzip' })).body.length;
    const res = await get(path, { 'Accept-Encoding': 'gzip', Range: `bytes=${length}-` });
    expect([res.status, res.headers['content-range'], res.headers['content-type'], res.headers['vary']]).toEqual([416, `bytes */${length}`, 'application/json', 'Accept-Encoding']);
    expect(res.json()).toEqual({ error: 'range_not_satisfiable', message: expect.any(String) });
    expect(res.headers['access-control-expose-headers']).toEqual(expect.stringContaining('Content-Range'));
  });

  it('resumes only the bytes If-Range names by their strong ETag; another ETag, a weak one or a date gets the whole representation', async () => {
    const whole = await get(path, { 'Accept-Encoding': 'gzip' });
    const etag = whole.headers['etag'] as string;
    const resumed = await get(path, { 'Accept-Encoding': 'gzip', Range: 'bytes=5-', 'If-Range': etag });
    expect([resumed.status, Buffer.concat([whole.body.subarray(0, 5), resumed.body]).equals(whole.body)]).toEqual([206, true]);
    for (const ifRange of [(await get(path)).headers['etag'] as string, `W/${etag}`, '"other"', whole.headers['last-modified'] as string]) {
      const res = await get(path, { 'Accept-Encoding': 'gzip', Range: 'bytes=5-', 'If-Range': ifRange });
      expect([ifRange, res.status, res.headers['content-range'], res.body.equals(whole.body)]).toEqual([ifRange, 200, undefined, true]);
    }
  });

  it('is ignored on HEAD, for other units, invalid specs and ranges with a gap: 200 with the whole representation', async () => {
    const whole = await get(path);
    for (const range of ['items=0-9', 'bytes=9-0', 'bytes=0-4,x', 'bytes=0-4,10-14']) {
      const res = await get(path, { Range: range });
      expect([range, res.status, res.headers['content-range'], res.body.equals(whole.body)]).toEqual([range, 200, undefined, true]);
    }
    const head = await send('HEAD', `${base}${path}`, { Range: 'bytes=0-9' });
    expect([head.status, head.headers['content-length'], head.headers['content-range'], head.body.length]).toEqual([200, String(whole.body.length), undefined, 0]);
  });

  it('comes after the preconditions: a matching If-None-Match is 304 and a failing If-Match 412 (§13.2.2)', async () => {
    const etag = (await get(path)).headers['etag'] as string;
    expect((await get(path, { Range: 'bytes=0-9', 'If-None-Match': etag })).status).toBe(304);
    expect((await get(path, { Range: 'bytes=0-9', 'If-Match': '"other"' })).status).toBe(412);
    expect((await get(path, { Range: 'bytes=0-9', 'If-Match': etag })).status).toBe(206);
  });
});

describe('content coding negotiation (RFC 9110 §12.5.3)', () => {
  const path = '/feed.xml';
  const codingFor = async (acceptEncoding: string) => (await get(path, { 'Accept-Encoding': acceptEncoding })).headers['content-encoding'] ?? 'identity';

  it('honours q-values, q=0 exclusions, * and case-insensitive names', async () => {
    expect(await codingFor('gzip, br')).toBe('br');
    expect(await codingFor('br;q=0.5, gzip;q=1')).toBe('gzip');
    expect(await codingFor('GZIP')).toBe('gzip');
    expect(await codingFor('x-gzip')).toBe('gzip');
    expect(await codingFor('*')).toBe('br');
    expect(await codingFor('*;q=0.1, identity;q=1')).toBe('identity');
    expect(await codingFor('br;q=0, *')).toBe('gzip');
    expect(await codingFor('gzip, identity;q=0')).toBe('gzip');
    expect(await codingFor('zstd')).toBe('identity');
    expect(await codingFor('')).toBe('identity');
  });

  it('with no acceptable coding (identity;q=0, *;q=0) sends the unencoded representation, as RFC 9110 §12.5.3 recommends, never a 406 or 5xx', async () => {
    for (const header of ['identity;q=0', '*;q=0', 'gzip;q=0, br;q=0, identity;q=0']) {
      const res = await get(path, { 'Accept-Encoding': header });
      expect([header, res.status]).toEqual([header, 200]);
      expect(res.headers['content-encoding']).toBeUndefined();
      expect(Number(res.headers['content-length'])).toBe(res.body.length);
    }
  });
});

describe('GET /reviews.json (spec §4.1, design §3)', () => {
  it('holds business, aggregate_rating and every review, newest first, each with every documented key', async () => {
    const body = (await get('/reviews.json')).json() as {
      business: Record<string, unknown>;
      aggregate_rating: { rating_value: number; review_count: number; best_rating: number; worst_rating: number; distribution: Record<string, number> };
      reviews: Array<Record<string, unknown>>;
    };
    expect(body.business).toEqual(expect.objectContaining({ id: expect.any(String), name: expect.any(String) }));
    expect(body.aggregate_rating.review_count).toBe(body.reviews.length);
    expect([body.aggregate_rating.best_rating, body.aggregate_rating.worst_rating]).toEqual([5, 1]);
    expect(Object.values(body.aggregate_rating.distribution).reduce((a, b) => a + b, 0)).toBe(body.reviews.length);
    const keys = ['id', 'author', 'author_avatar_url', 'rating', 'date', 'text', 'source', 'source_url', 'owner_reply', 'verified'];
    for (const review of body.reviews) {
      expect(Object.keys(review).sort()).toEqual([...keys].sort());
      expect(Number.isInteger(review['rating']) && (review['rating'] as number) >= 1 && (review['rating'] as number) <= 5).toBe(true);
      expect(review['date']).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    }
    const dates = body.reviews.map((r) => r['date'] as string);
    expect(dates).toEqual([...dates].sort().reverse());
  });

  it('ignores an Authorization header (spec §5.2)', async () => {
    const plain = await get('/reviews.json');
    const withAuth = await get('/reviews.json', { Authorization: 'Bearer whatever' });
    expect(withAuth.status).toBe(200);
    expect(withAuth.headers['etag']).toBe(plain.headers['etag']);
  });
});

describe('GET /api/reviews/search (spec §4.4, §7, §8)', () => {
  type SearchBody = { matched: number; returned: number; reviews: Array<{ rating: number; date: string; text: string | null }> };
  const search = async (query: string) => {
    const res = await get(`/api/reviews/search${query}`);
    return { res, body: res.json() as SearchBody & { error?: string; issues?: Array<{ path: Array<string | number>; message: string }> } };
  };

  it('defaults to 20 results, newest first, with full review fields', async () => {
    const { res, body } = await search('');
    expect(res.status).toBe(200);
    expect(body.reviews).toHaveLength(20);
    expect(body.returned).toBe(20);
    expect(body.matched).toBeGreaterThan(20);
    const dates = body.reviews.map((r) => r.date);
    expect(dates).toEqual([...dates].sort().reverse());
  });

  it.each([
    ['rating=0', 'rating'],
    ['rating=6', 'rating'],
    ['rating=1.5', 'rating'],
    ['rating=abc', 'rating'],
    ['rating=', 'rating'],
    ['min_rating=0.5', 'min_rating'],
    ['min_rating=5.5', 'min_rating'],
    ['min_rating=x', 'min_rating'],
    ['limit=0', 'limit'],
    ['limit=101', 'limit'],
    ['limit=2.5', 'limit'],
    ['since=2025-02-30', 'since'],
    ['until=2025-13-01', 'until'],
    ['since=2025-1-1', 'since'],
    ['since=2025-05-01&until=2025-01-01', 'until'],
    ['unknown=1', 'unknown'],
    ['rating=5&rating=4', 'rating'],
  ])('?%s is 400 application/json with an issues array naming %s', async (query, field) => {
    const { res, body } = await search(`?${query}`);
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toBe('application/json');
    expect(body.error).toEqual(expect.any(String));
    expect(Array.isArray(body.issues)).toBe(true);
    expect(body.issues?.some((issue) => issue.path[0] === field && issue.message.length > 0)).toBe(true);
  });

  it.each([
    ['rating=1', (r: { rating: number }) => r.rating === 1],
    ['rating=5&limit=100', (r: { rating: number }) => r.rating === 5],
    ['min_rating=4', (r: { rating: number }) => r.rating >= 4],
    ['min_rating=4.5', (r: { rating: number }) => r.rating === 5],
    ['min_rating=1', () => true],
  ])('?%s returns only matching reviews', async (query, matches) => {
    const { res, body } = await search(`?${query}`);
    expect(res.status).toBe(200);
    expect(body.reviews.length).toBeGreaterThan(0);
    expect(body.reviews.every(matches)).toBe(true);
  });

  it('limit 1 and 100 are accepted bounds', async () => {
    expect((await search('?limit=1')).body.reviews).toHaveLength(1);
    expect((await search('?limit=100')).body.reviews).toHaveLength(100);
  });

  it('since/until are inclusive calendar dates; a leap day is a real date', async () => {
    const { body } = await search('?since=2026-10-01&until=2026-10-16&limit=100');
    expect(body.reviews.every((r) => r.date >= '2026-10-01' && r.date <= '2026-10-16')).toBe(true);
    expect(body.reviews.some((r) => r.date === '2026-10-16')).toBe(true);
    expect((await search('?since=2024-02-29')).res.status).toBe(200);
    expect((await search('?since=2025-02-29')).res.status).toBe(400);
  });

  it('query is a case-insensitive substring of the text; no match is 200 with an empty list', async () => {
    const { body } = await search('?query=PRICE%20LIST&limit=100');
    expect(body.reviews.length).toBeGreaterThan(0);
    expect(body.reviews.every((r) => r.text?.toLowerCase().includes('price list'))).toBe(true);
    const none = await search('?query=zzzz-no-such-text');
    expect(none.res.status).toBe(200);
    expect(none.body).toEqual({ matched: 0, returned: 0, reviews: [], next_cursor: null });
  });

  it('mentions_technician (name or alias, any case) and mentions_service (id) filter', async () => {
    const byName = await search('?mentions_technician=Margaret%20Ellison&limit=100');
    const byAlias = await search('?mentions_technician=maggie&limit=100');
    expect(byName.res.status).toBe(200);
    expect(byName.body.matched).toBeGreaterThan(0);
    expect(byAlias.body.matched).toBe(byName.body.matched);
    const service = await search('?mentions_service=direct-cremation');
    expect(service.res.status).toBe(200);
    expect(service.body.matched).toBeGreaterThan(0);
  });
});

describe('GET /api/reviews/since/{date} (spec §4.5, §4.8)', () => {
  it('returns the reviews on or after the date in a reviews array', async () => {
    const res = await get('/api/reviews/since/2026-10-01');
    const body = res.json() as { reviews: Array<{ date: string }> };
    expect(res.status).toBe(200);
    expect(body.reviews.length).toBeGreaterThan(0);
    expect(body.reviews.every((r) => r.date >= '2026-10-01')).toBe(true);
    const all = (await get('/reviews.json')).json() as { reviews: Array<{ date: string }> };
    expect(body.reviews.length).toBe(all.reviews.filter((r) => r.date >= '2026-10-01').length);
  });

  it('If-Modified-Since gives 304 per date, and never hides a malformed date (400 wins over 304)', async () => {
    const first = await get('/api/reviews/since/2026-10-01');
    const lastModified = first.headers['last-modified'] as string;
    expect((await get('/api/reviews/since/2026-10-01', { 'If-Modified-Since': lastModified })).status).toBe(304);
    expect((await get('/api/reviews/since/2025-02-30', { 'If-Modified-Since': lastModified })).status).toBe(400);
    expect((await get('/api/reviews/since/2025-02-30', { 'If-None-Match': '*' })).status).toBe(400);
    const other = await get('/api/reviews/since/2026-09-01');
    expect(other.headers['etag']).not.toBe(first.headers['etag']);
    expect((await get('/api/reviews/since/2026-09-01', { 'If-None-Match': first.headers['etag'] as string })).status).toBe(200);
  });

  it('a date after every review is 200 with an empty list', async () => {
    const res = await get('/api/reviews/since/2099-01-01');
    expect(res.status).toBe(200);
    expect((res.json() as { reviews: unknown[] }).reviews).toEqual([]);
  });

  it.each(['2025-02-30', 'abc', '2025-1-01', '20250101'])('a malformed date %s is 400 JSON with issues naming date', async (date) => {
    const res = await get(`/api/reviews/since/${date}`);
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toBe('application/json');
    const body = res.json() as { error: string; issues: Array<{ path: string[] }> };
    expect(body.error).toEqual(expect.any(String));
    expect(body.issues[0]?.path).toEqual(['date']);
  });
});

describe('errors and methods (design card §4)', () => {
  it('an unknown path is 404 application/json with the error envelope', async () => {
    for (const path of ['/nope', '/reviews.json/', '/api/reviews/since/', '/REVIEWS.JSON']) {
      const res = await get(path);
      expect([path, res.status]).toEqual([path, 404]);
      expect(res.headers['content-type']).toBe('application/json');
      expect(res.json()).toEqual({ error: 'not_found', message: expect.any(String) });
    }
  });

  it.each(['POST', 'PUT', 'DELETE', 'PATCH'])('%s on a read endpoint is 405 with Allow and a JSON envelope', async (method) => {
    for (const { path } of READ_ENDPOINTS) {
      const res = await send(method, `${base}${path}`, { 'Content-Type': 'application/json' }, '{}');
      expect([path, res.status]).toEqual([path, 405]);
      expect(res.headers['allow']).toBe('GET, HEAD, OPTIONS');
      expect(res.headers['content-type']).toBe('application/json');
      expect((res.json() as { error: string }).error).toBe('method_not_allowed');
    }
  });

  it('OPTIONS and a CORS preflight answer 204 with Allow and the allowed methods', async () => {
    const plain = await send('OPTIONS', `${base}/reviews.json`);
    expect(plain.status).toBe(204);
    expect(plain.headers['allow']).toBe('GET, HEAD, OPTIONS');
    const preflight = await send('OPTIONS', `${base}/api/reviews/search`, {
      Origin: 'https://app.example',
      'Access-Control-Request-Method': 'GET',
      'Access-Control-Request-Headers': 'if-none-match',
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBe('*');
    expect(preflight.headers['access-control-allow-methods']).toEqual(expect.stringContaining('GET'));
    expect(preflight.headers['access-control-allow-headers']?.toLowerCase()).toContain('if-none-match');
    expect(preflight.body.length).toBe(0);
  });
});

describe('OPTIONS * (RFC 9110 §9.3.7)', () => {
  it('is 204 with Allow naming every method some resource of the server takes, POST of MCP and the hub included', async () => {
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = httpRequest(base, { method: 'OPTIONS', path: '*', agent: false }, (answer) => {
        answer.resume();
        resolve(answer);
      });
      req.on('error', reject);
      req.end();
    });
    expect(res.statusCode).toBe(204);
    expect(res.headers['allow']).toBe('GET, HEAD, OPTIONS, POST');
  });
});

// The HTTP-semantics audit: the 501 went out ahead of the answers owed to the requests before it, and node:http
// leaves such a connection unwatched: a client's reset was an uncaught error that ended the process.
describe('CONNECT (RFC 9110 §9.3.6), which an origin server does not implement', () => {
  it('is answered 501 after the requests pipelined before it, and a client resetting the connection then leaves the service serving', async () => {
    const { hostname, port } = new URL(base);
    const socket = connect(Number(port), hostname, () => socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /readyz HTTP/1.1\r\nHost: x\r\n\r\nCONNECT a.example:443 HTTP/1.1\r\nHost: a.example:443\r\n\r\n'));
    socket.on('error', () => undefined);
    let answer = '';
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no 501 within 5 s: ${answer}`)), 5_000);
      socket.on('data', () => {
        if (!answer.includes('"not_implemented"')) return;
        clearTimeout(timer);
        resolve();
      });
    });
    socket.resetAndDestroy();
    expect(answer.match(/HTTP\/1\.1 \d{3}/g)).toEqual(['HTTP/1.1 200', 'HTTP/1.1 200', 'HTTP/1.1 501']);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await get('/healthz')).status).toBe(200);
  });
});
