import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { send, startStandalone, type Standalone } from './harness.js';

/** GET /.well-known/openapi.json against what the running service answers, method by method. */
let server: Standalone;
let paths: Record<string, Record<string, Operation | undefined>>;
beforeAll(async () => {
  server = await startStandalone();
  paths = ((await send('GET', `${server.baseUrl}/.well-known/openapi.json`)).json() as { paths: typeof paths }).paths;
}, 30_000);
afterAll(() => server.stop());

type Operation = { responses: Record<string, { headers?: Record<string, unknown> } | undefined> };

/** A concrete path for a template: the one templated path takes a date. */
const concrete = (template: string) => template.replace('{date}', '2026-01-01');

/** Methods a client may try on any path; 404, 405 and 501 mean the path does not take it. */
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'] as const;
const NOT_TAKEN = new Set([404, 405, 501]);

describe('the OpenAPI document lists every method the service answers', () => {
  it('each method a documented path answers is an operation of that path', async () => {
    for (const template of Object.keys(paths)) {
      for (const method of METHODS) {
        const res = await send(method, `${server.baseUrl}${concrete(template)}`);
        if (NOT_TAKEN.has(res.status)) continue;
        expect([method, template, res.status, paths[template]?.[method.toLowerCase()] !== undefined]).toEqual([method, template, res.status, true]);
      }
    }
  });

  it('HEAD on every GET path answers the GET status with the documented headers and no body', async () => {
    const gets = Object.keys(paths).filter((template) => paths[template]?.['get']?.responses['200'] !== undefined);
    expect(gets).toEqual(expect.arrayContaining(['/reviews.json', '/api/reviews/search', '/api/reviews/since/{date}', '/healthz']));
    for (const template of gets) {
      const res = await send('HEAD', `${server.baseUrl}${concrete(template)}`);
      expect([template, res.status, res.body.length]).toEqual([template, 200, 0]);
      const documented = Object.keys(paths[template]?.['head']?.responses['200']?.headers ?? {});
      expect([template, documented]).toEqual([template, Object.keys(paths[template]?.['get']?.responses['200']?.headers ?? {})]);
      for (const header of documented) expect([template, header, res.headers[header.toLowerCase()]]).toEqual([template, header, expect.any(String)]);
    }
  });
});

describe('the documented request-target errors', () => {
  it('a search whose query escapes are malformed or not UTF-8 gets the documented 400 envelope, as in the path', async () => {
    for (const query of ['a%2', '%FF']) {
      const res = await send('GET', `${server.baseUrl}/api/reviews/search?query=${query}`);
      expect([query, res.status, paths['/api/reviews/search']?.['get']?.responses['400'] !== undefined]).toEqual([query, 400, true]);
      expect(res.json()).toEqual({ error: 'bad_request', message: expect.stringContaining('request query'), issues: [{ code: 'custom', path: ['query'], message: expect.any(String) }] });
    }
  });
});
