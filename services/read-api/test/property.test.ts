import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import fc from 'fast-check';
import request from 'supertest';
import { close, listen, startTestApi, type TestApi } from './helpers.js';

let api: TestApi;
let url: string;

beforeAll(async () => {
  api = startTestApi();
  url = await listen(api.server);
});
afterAll(() => close(api.server));

const PARAMS = ['rating', 'min_rating', 'since', 'until', 'query', 'mentions_technician', 'mentions_service', 'limit', 'x', ''];
const VALUES = fc.oneof(fc.string(), fc.integer({ min: -10, max: 200 }).map(String), fc.double({ noNaN: false }).map(String), fc.constantFrom('2025-01-01', '2025-02-29', '0000-00-00', 'Maggie', '%', '%zz', '&', '='));
const pair = fc.tuple(fc.constantFrom(...PARAMS), VALUES).map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`);
const rawQuery = fc.oneof(fc.array(pair, { maxLength: 5 }).map((pairs) => pairs.join('&')), fc.string({ maxLength: 60 }).map((s) => s.replace(/[#\s]/g, '')));
const segment = fc.oneof(fc.constantFrom('api', 'reviews', 'search', 'since', 'feed.json', 'reviews.json', '..', '.', '%2F', '%E0'), fc.string({ maxLength: 12 }).map(encodeURIComponent));
const path = fc.oneof(
  fc.array(segment, { minLength: 0, maxLength: 5 }).map((segments) => `/${segments.join('/')}`),
  segment.map((s) => `/api/reviews/since/${s}`),
);

function checkResponse(res: request.Response): void {
  expect(res.status).toBeLessThan(500);
  if (res.status >= 400) {
    expect(res.headers['content-type']).toBe('application/json');
    const body = res.body as { error?: unknown; message?: unknown };
    expect(typeof body.error).toBe('string');
    expect(typeof body.message).toBe('string');
    expect(res.text).not.toMatch(/<html|at .+\.ts:\d+/i);
  }
}

describe('any request target', () => {
  it('search: never 5xx, 4xx always the JSON envelope', async () => {
    await fc.assert(
      fc.asyncProperty(rawQuery, async (query) => {
        checkResponse(await request(url).get(`/api/reviews/search?${query}`));
      }),
      { numRuns: 150 },
    );
  });

  it('paths: never 5xx, 4xx always the JSON envelope', async () => {
    await fc.assert(
      fc.asyncProperty(path, rawQuery, fc.constantFrom('GET', 'HEAD', 'POST', 'DELETE', 'OPTIONS'), async (p, query, method) => {
        const res = await request(url)[method.toLowerCase() as 'get'](`${p}?${query}`);
        expect(res.status).toBeLessThan(500);
        if (method !== 'HEAD') checkResponse(res);
      }),
      { numRuns: 150 },
    );
  });
});
