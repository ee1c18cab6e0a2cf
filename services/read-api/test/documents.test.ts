import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import request from 'supertest';
import { buildDataset } from '../../../libs/domain/test/fixtures.js';
import { BASE_URL, close, decoded, expectEnvelope, listen, PUBLISHED_AT, rawRequest, snapshotOf, startTestApi, type TestApi } from './helpers.js';

let api: TestApi;
let url: string;

beforeAll(async () => {
  api = startTestApi();
  url = await listen(api.server);
});
afterAll(() => close(api.server));

const get = (path: string, headers: Record<string, string | string[]> = {}) => rawRequest(url, path, headers);

const HUB = `${BASE_URL}/api/websub/hub`;
const DOCUMENTS = [
  { path: '/reviews.json', type: 'application/json', link: `<${HUB}>; rel="hub", <${BASE_URL}/reviews.json>; rel="self"` },
  { path: '/insights.json', type: 'application/json', link: undefined },
  { path: '/api/feed.json', type: 'application/json', link: `<${HUB}>; rel="hub", <${BASE_URL}/api/feed.json>; rel="self"` },
  { path: '/feed.xml', type: 'application/atom+xml', link: `<${HUB}>; rel="hub", <${BASE_URL}/feed.xml>; rel="self"` },
  { path: '/.well-known/openapi.json', type: 'application/json', link: undefined },
];

describe.each(DOCUMENTS)('GET $path', ({ path, type, link }) => {
  it('serves the precomputed bytes with exact headers', async () => {
    const res = await get(path, { 'Accept-Encoding': 'identity' });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe(type);
    expect(res.headers['content-encoding']).toBeUndefined();
    expect(res.headers['content-length']).toBe(String(res.body.length));
    expect(res.headers['etag']).toMatch(/^"[A-Za-z0-9_-]+"$/);
    expect(res.headers['last-modified']).toBe(PUBLISHED_AT.toUTCString());
    expect(res.headers['cache-control']).toBe('public, max-age=60, must-revalidate');
    expect(res.headers['vary']).toBe('Accept-Encoding');
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.headers['access-control-expose-headers']).toBe('ETag, Last-Modified, Link, Mcp-Session-Id, Retry-After, Allow, Accept-Ranges, Content-Range');
    expect(res.headers['accept-ranges']).toBe('bytes');
    expect(res.headers['link']).toBe(link);
    expect(res.headers['x-powered-by']).toBeUndefined();
    if (type === 'application/json') expect(() => JSON.parse(res.body.toString('utf8'))).not.toThrow();
  });

  it('answers HEAD with the same headers and no body', async () => {
    const full = await get(path, { 'Accept-Encoding': 'br' });
    const head = await request(url).head(path).set('Accept-Encoding', 'br');
    expect(head.status).toBe(200);
    for (const header of ['content-type', 'content-length', 'etag', 'last-modified', 'content-encoding', 'link', 'vary']) {
      expect(head.headers[header]).toBe(full.headers[header]);
    }
    expect(head.text ?? '').toBe('');
    expect(full.body.length).toBeGreaterThan(0);
  });

  it.each([
    ['br', 'br'],
    ['gzip', 'gzip'],
    ['gzip, deflate, br', 'br'],
    ['br;q=0, gzip', 'gzip'],
    ['br;q=0, gzip;q=0', undefined],
    ['*;q=0.1, br;q=0', 'gzip'],
    ['identity', undefined],
  ])('Accept-Encoding %p -> %p, same bytes, own ETag', async (accept, encoding) => {
    const plain = await get(path, { 'Accept-Encoding': 'identity' });
    const res = await get(path, { 'Accept-Encoding': accept });
    expect(res.status).toBe(200);
    expect(res.headers['content-encoding']).toBe(encoding);
    expect(decoded(res).equals(plain.body)).toBe(true);
    if (encoding) expect(res.headers['etag']).not.toBe(plain.headers['etag']);
    else expect(res.headers['etag']).toBe(plain.headers['etag']);
  });

  // Varnish picks a cached variant by the first line alone: a br answer to these was served to gzip-only clients.
  it('answers an Accept-Encoding sent on two lines unencoded, which any cache key accepts', async () => {
    for (const lines of [['gzip', 'br'], ['identity', 'br'], ['gzip, deflate', 'br;q=1']]) {
      const res = await get(path, { 'Accept-Encoding': lines });
      expect([res.status, res.headers['content-encoding'], res.headers['vary']]).toEqual([200, undefined, 'Accept-Encoding']);
    }
    expect((await get(path, { 'Accept-Encoding': 'gzip, br' })).headers['content-encoding']).toBe('br');
  });

  describe('conditional GET', () => {
    let etag: string;
    beforeAll(async () => {
      etag = (await get(path, { 'Accept-Encoding': 'gzip' })).headers['etag'] as string;
    });

    it.each([
      ['the ETag', (e: string) => e],
      ['a list holding it', (e: string) => `"nope", ${e}`],
      ['its weak form', (e: string) => `W/${e}`],
      ['*', () => '*'],
    ])('If-None-Match with %s -> 304 with validators and no body', async (_name, value) => {
      const res = await get(path, { 'Accept-Encoding': 'gzip', 'If-None-Match': value(etag) });
      expect(res.status).toBe(304);
      expect(res.body.length).toBe(0);
      expect(res.headers['etag']).toBe(etag);
      expect(res.headers['cache-control']).toBe('public, max-age=60, must-revalidate');
      expect(res.headers['vary']).toBe('Accept-Encoding');
      expect(res.headers['last-modified']).toBeUndefined();
    });

    it('an ETag of another coding does not match', async () => {
      const res = await get(path, { 'Accept-Encoding': 'identity', 'If-None-Match': etag });
      expect(res.status).toBe(200);
    });

    it('If-Modified-Since at or after the publish time -> 304; before -> 200; invalid -> 200', async () => {
      expect((await get(path, { 'If-Modified-Since': PUBLISHED_AT.toUTCString() })).status).toBe(304);
      expect((await get(path, { 'If-Modified-Since': new Date(PUBLISHED_AT.getTime() - 1000).toUTCString() })).status).toBe(200);
      expect((await get(path, { 'If-Modified-Since': 'last tuesday' })).status).toBe(200);
    });

    it('a date precondition sent on two field lines is a list, which is ignored: 200, not 304 or 412 (RFC 9110 §13.1.3, §13.1.4)', async () => {
      const later = new Date(PUBLISHED_AT.getTime() + 60_000).toUTCString();
      const earlier = new Date(PUBLISHED_AT.getTime() - 60_000).toUTCString();
      expect((await rawRequest(url, path, { 'If-Modified-Since': [later, earlier] })).status).toBe(200);
      expect((await rawRequest(url, path, { 'If-Unmodified-Since': [earlier, later] })).status).toBe(200);
    });

    it('If-None-Match takes precedence over If-Modified-Since', async () => {
      const res = await get(path, { 'If-None-Match': '"stale"', 'If-Modified-Since': PUBLISHED_AT.toUTCString() });
      expect(res.status).toBe(200);
    });
  });

  it('rejects other methods with 405, Allow and the envelope', async () => {
    for (const method of ['post', 'put', 'delete', 'patch'] as const) {
      const res = await request(url)[method](path).send('x');
      const body = expectEnvelope(res, 405, 'method_not_allowed');
      expect(body.message).toContain('GET');
      expect(res.headers['allow']).toBe('GET, HEAD, OPTIONS');
      expect(res.headers['access-control-expose-headers']?.split(', ')).toContain('Allow');
    }
  });

  it('answers a CORS preflight with 204', async () => {
    const res = await request(url).options(path).set('Origin', 'https://app.example').set('Access-Control-Request-Method', 'GET').set('Access-Control-Request-Headers', 'if-none-match');
    expect(res.status).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.headers['access-control-allow-methods']).toBe('GET, HEAD, OPTIONS');
    expect(res.headers['access-control-allow-headers']).toBe('if-none-match');
    // Cached a day, so a page does not preflight every conditional request.
    expect(res.headers['access-control-max-age']).toBe('86400');
  });

  it('echoes only a well-formed list of header names in a preflight', async () => {
    const preflight = (requested: string) => request(url).options(path).set('Origin', 'https://app.example').set('Access-Control-Request-Method', 'GET').set('Access-Control-Request-Headers', requested);
    expect((await preflight('if-none-match, range')).headers['access-control-allow-headers']).toBe('if-none-match, range');
    const malformed = await preflight('if-none-match, <script>');
    expect(malformed.status).toBe(204);
    expect(malformed.headers['access-control-allow-headers']).toBeUndefined();
  });

  it('ignores an Authorization header and a query string', async () => {
    const plain = await get(path);
    const res = await get(`${path}?cache=bust`, { Authorization: 'Bearer whatever' });
    expect(res.status).toBe(200);
    expect(res.headers['etag']).toBe(plain.headers['etag']);
  });
});

describe('feeds', () => {
  it('the JSON Feed holds the 50 newest reviews', async () => {
    const feed = JSON.parse((await get('/api/feed.json', { 'Accept-Encoding': 'identity' })).body.toString()) as { version: string; items: unknown[]; hubs: Array<{ type: string; url: string }> };
    expect(feed.version).toBe('https://jsonfeed.org/version/1.1');
    expect(feed.items).toHaveLength(50);
    expect(feed.hubs).toEqual([{ type: 'WebSub', url: HUB }]);
  });

  it('the Atom feed holds 50 entries and advertises the hub', async () => {
    const xml = (await get('/feed.xml')).body.toString();
    expect(xml.match(/<entry[\s>]/g)).toHaveLength(50);
    expect(xml).toContain(`href="${HUB}"`);
  });

  it('/reviews.json carries every review, newest first', async () => {
    const doc = JSON.parse((await get('/reviews.json')).body.toString()) as { reviews: Array<{ date: string; id: string }> };
    expect(doc.reviews).toHaveLength(120);
    const keys = doc.reviews.map((r) => `${r.date}|${r.id}`);
    expect([...keys].sort().reverse()).toEqual(keys);
  });
});

describe('errors', () => {
  it.each(['/', '/nope', '/reviews.json/', '/REVIEWS.JSON', '/api/reviews', '/api/reviews/since/', '/api/reviews/since/2025-01-01/x', '/index.html'])('%s -> 404 envelope', async (path) => {
    expectEnvelope(await request(url).get(path), 404, 'not_found');
  });

  it('unknown paths are 404 whatever the method', async () => {
    expectEnvelope(await request(url).post('/nope'), 404, 'not_found');
  });

  it('an over-long request target -> 414 envelope', async () => {
    expectEnvelope(await request(url).get(`/api/reviews/search?query=${'a'.repeat(9000)}`), 414, 'uri_too_long');
  });

  it('no dataset loaded -> 503 envelope on every read endpoint', async () => {
    api.serve(null);
    try {
      for (const path of ['/reviews.json', '/api/reviews/search', '/api/reviews/since/2025-01-01']) {
        const res = await request(url).get(path);
        expectEnvelope(res, 503, 'not_ready');
        // A page on another origin can only wait as long as it is told if it may read the header.
        expect([res.headers['retry-after'], res.headers['access-control-expose-headers']?.split(', ')]).toEqual([expect.any(String), expect.arrayContaining(['Retry-After'])]);
      }
    } finally {
      api.serve(api.snapshot);
    }
  });
});

describe('a dataset published "in the future"', () => {
  it('is served as last modified when first served, never after Date, and If-Modified-Since still works (RFC 9110 §8.8.2.1)', async () => {
    const ahead = startTestApi();
    ahead.serve(snapshotOf(buildDataset({ reviews: 30, seed: 5 }), new Date('2030-01-01T00:00:00Z')));
    const aheadUrl = await listen(ahead.server);
    try {
      for (const path of ['/reviews.json', '/api/reviews/since/2020-01-01']) {
        const first = await request(aheadUrl).get(path);
        const lastModified = Date.parse(first.headers['last-modified'] as string);
        expect(lastModified).toBeLessThanOrEqual(Date.parse(first.headers['date'] as string));
        expect(lastModified).toBeGreaterThan(Date.now() - 60_000);
        expect((await request(aheadUrl).get(path).set('If-Modified-Since', new Date().toUTCString())).status).toBe(304);
        expect((await request(aheadUrl).get(path)).headers['last-modified']).toBe(first.headers['last-modified']);
      }
    } finally {
      await close(ahead.server);
    }
  });
});

describe('metrics', () => {
  it('records the fast path and the query routes by template', async () => {
    await get('/reviews.json');
    await get('/api/reviews/since/2025-01-01');
    await get('/definitely-not-here');
    const text = await api.metrics.registry.metrics();
    expect(text).toMatch(/http_request_duration_seconds_count\{[^}]*route="\/reviews.json"[^}]*status_code="200"[^}]*\} \d+/);
    expect(text).toMatch(/http_request_duration_seconds_count\{[^}]*route="\/api\/reviews\/since\/:date"/);
    expect(text).toMatch(/http_request_duration_seconds_count\{[^}]*route="unmatched"[^}]*status_code="404"/);
    expect(text).not.toContain('definitely-not-here');
  });
});
