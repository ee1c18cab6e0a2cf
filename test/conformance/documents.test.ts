import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import SwaggerParser from '@apidevtools/swagger-parser';
import { Ajv2020 } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import { READ_ENDPOINTS, send, startStandalone, type Standalone } from './harness.js';

/** JSON Feed 1.1, RFC 4287 Atom, OpenAPI 3.1 and the insights groups of interface spec §2, as served. */
let server: Standalone;
let base: string;
beforeAll(async () => {
  server = await startStandalone();
  base = server.baseUrl;
}, 30_000);
afterAll(() => server.stop());

type Json = Record<string, unknown>;
const getJson = async (path: string) => (await send('GET', `${base}${path}`)).json() as Json;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

describe('GET /api/feed.json is JSON Feed 1.1 (jsonfeed.org/version/1.1)', () => {
  let feed: Json;
  let reviews: Array<{ id: string; date: string; rating: number }>;
  beforeAll(async () => {
    feed = await getJson('/api/feed.json');
    reviews = (await getJson('/reviews.json'))['reviews'] as typeof reviews;
  });

  it('has the required top-level version, title and items, and a feed_url that is this endpoint', () => {
    expect(feed['version']).toBe('https://jsonfeed.org/version/1.1');
    expect(typeof feed['title']).toBe('string');
    expect((feed['title'] as string).length).toBeGreaterThan(0);
    expect(Array.isArray(feed['items'])).toBe(true);
    expect(feed['feed_url']).toBe(`${base}/api/feed.json`);
  });

  it('holds exactly the 50 newest reviews, newest first (spec §4.3)', () => {
    const items = feed['items'] as Json[];
    expect(items).toHaveLength(50);
    expect(items.map((item) => item['id'])).toEqual(reviews.slice(0, 50).map((r) => r.id));
  });

  it('every item has a string id, content_text or content_html, and RFC 3339 dates; extensions start with _', () => {
    for (const item of feed['items'] as Json[]) {
      expect(typeof item['id']).toBe('string');
      expect(typeof item['content_text'] === 'string' || typeof item['content_html'] === 'string').toBe(true);
      if (item['date_published'] !== undefined) expect(item['date_published']).toMatch(RFC3339);
      if (item['url'] !== undefined) expect(() => new URL(item['url'] as string)).not.toThrow();
      for (const author of (item['authors'] as Json[] | undefined) ?? []) expect(typeof author['name']).toBe('string');
      const known = ['id', 'url', 'external_url', 'title', 'content_html', 'content_text', 'summary', 'image', 'banner_image', 'date_published', 'date_modified', 'authors', 'tags', 'language', 'attachments'];
      for (const key of Object.keys(item)) expect(known.includes(key) || key.startsWith('_')).toBe(true);
    }
  });

  it('advertises the hub as hubs[{type: "WebSub", url}]', () => {
    expect(feed['hubs']).toEqual([{ type: 'WebSub', url: `${base}/api/websub/hub` }]);
  });
});

/**
 * A small XML 1.0 well-formedness check: one root, properly nested and closed tags, quoted attributes,
 * only the predefined or numeric character references. Enough for generated documents without a DTD.
 */
function checkWellFormed(xml: string): string[] {
  const problems: string[] = [];
  const body = xml.replace(/^<\?xml[^?]*\?>\s*/, '');
  if (!xml.startsWith('<?xml version="1.0" encoding="utf-8"?>')) problems.push('no XML declaration');
  for (const ref of body.matchAll(/&([^;\s]*);?/g)) {
    if (!/^&(amp|lt|gt|quot|apos|#\d+|#x[0-9a-fA-F]+);$/.test(ref[0])) problems.push(`bad reference ${ref[0]}`);
  }
  const stack: string[] = [];
  let roots = 0;
  for (const tag of body.matchAll(/<(\/?)([A-Za-z_][\w.:-]*)((?:\s+[\w.:-]+\s*=\s*(?:"[^"<]*"|'[^'<]*'))*)\s*(\/?)>|<[^>]*>?/g)) {
    const [whole, closing, name, , selfClosing] = tag;
    if (name === undefined) {
      problems.push(`malformed tag ${whole.slice(0, 40)}`);
      continue;
    }
    if (stack.length === 0 && !closing) roots++;
    if (closing) {
      if (stack.pop() !== name) problems.push(`mismatched </${name}>`);
    } else if (!selfClosing) {
      stack.push(name);
    }
  }
  if (stack.length > 0) problems.push(`unclosed ${stack.join(' > ')}`);
  if (roots !== 1) problems.push(`${roots} root elements`);
  // eslint-disable-next-line no-control-regex -- the point is to find the control characters XML forbids
  if (/[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]/.test(body)) problems.push('a character XML 1.0 forbids');
  return problems;
}

describe('GET /feed.xml is RFC 4287 Atom', () => {
  let xml: string;
  let reviews: Array<{ id: string; source_url: string | null }>;
  beforeAll(async () => {
    xml = (await send('GET', `${base}/feed.xml`)).text();
    reviews = (await getJson('/reviews.json'))['reviews'] as typeof reviews;
  });

  it('is well-formed XML with an atom:feed root in the Atom namespace', () => {
    expect(checkWellFormed(xml)).toEqual([]);
    expect(xml).toMatch(/<feed xmlns="http:\/\/www\.w3\.org\/2005\/Atom"[\s>]/);
  });

  it('feed has exactly one id, title and RFC 3339 updated, an author (so entries may omit theirs), and self + hub links (WebSub §4)', () => {
    const head = xml.slice(0, xml.indexOf('<entry>'));
    expect(head.match(/<id>[^<]+<\/id>/g)).toHaveLength(1);
    expect(head.match(/<title[^>]*>[^<]+<\/title>/g)).toHaveLength(1);
    const updated = head.match(/<updated>([^<]+)<\/updated>/g);
    expect(updated).toHaveLength(1);
    expect(updated?.[0]?.replace(/<\/?updated>/g, '')).toMatch(RFC3339);
    expect(head).toMatch(/<author>\s*<name>[^<]+<\/name>/);
    expect(head).toContain(`<link rel="self" type="application/atom+xml" href="${base}/feed.xml"/>`);
    expect(head).toContain(`<link rel="hub" href="${base}/api/websub/hub"/>`);
  });

  it('holds the 50 newest reviews as entries, each with one id, title, updated and content, ids unique', () => {
    const entries = xml.match(/<entry>[\s\S]*?<\/entry>/g) ?? [];
    expect(entries).toHaveLength(50);
    const ids = entries.map((entry) => /<id>([^<]+)<\/id>/.exec(entry)?.[1]);
    expect(new Set(ids).size).toBe(50);
    // RFC 4287 §4.2.6: ids that do not move with the deployment (urn:uuid, not BASE_URL).
    for (const id of ids) expect(id).toMatch(/^urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    entries.forEach((entry, index) => {
      expect(entry.match(/<id>/g)).toHaveLength(1);
      expect(entry.match(/<title[ >]/g)).toHaveLength(1);
      expect(entry.match(/<updated>/g)).toHaveLength(1);
      expect(/<updated>([^<]+)<\/updated>/.exec(entry)?.[1]).toMatch(RFC3339);
      expect(entry).toMatch(/<content type="(text|html|xhtml)">/);
      const review = reviews[index]!;
      expect(entry).toContain(`<link rel="alternate" href="${(review.source_url ?? `${base}/reviews.json#${review.id}`).replaceAll('&', '&amp;')}"/>`);
    });
  });
});

describe('GET /.well-known/openapi.json is an OpenAPI 3.1.0 description that matches the service', () => {
  let doc: Json;
  let ajv: Ajv2020;
  beforeAll(async () => {
    doc = await getJson('/.well-known/openapi.json');
    ajv = new Ajv2020({ strict: false, allErrors: true });
    formats.default(ajv);
    ajv.addSchema(doc, 'openapi.json');
  });

  it('validates as OpenAPI 3.1.0, info version 1.0.0, and its servers point here', async () => {
    expect(doc['openapi']).toBe('3.1.0');
    expect((doc['info'] as Json)['version']).toBe('1.0.0');
    await expect(SwaggerParser.validate(structuredClone(doc) as never)).resolves.toBeTruthy();
    expect(doc['servers']).toEqual([{ url: base }]);
  });

  it('documents every endpoint of interface spec §4', () => {
    const paths = doc['paths'] as Record<string, Json>;
    for (const path of ['/reviews.json', '/insights.json', '/api/feed.json', '/feed.xml', '/api/reviews/search', '/api/reviews/since/{date}', '/.well-known/openapi.json']) {
      expect([path, Object.keys(paths[path] ?? {})]).toEqual([path, expect.arrayContaining(['get'])]);
    }
    expect(Object.keys(paths['/mcp'] ?? {})).toContain('post');
    expect(Object.keys(paths['/api/websub/hub'] ?? {})).toContain('post');
  });

  it('documents the search parameters with the bounds of spec §4.4', () => {
    const params = ((doc['paths'] as Record<string, Json>)['/api/reviews/search']?.['get'] as Json)['parameters'] as Json[];
    const schemaOf = (name: string) => params.find((p) => p['name'] === name)?.['schema'] as Json | undefined;
    expect(schemaOf('rating')).toEqual(expect.objectContaining({ type: 'integer', minimum: 1, maximum: 5 }));
    expect(schemaOf('min_rating')).toEqual(expect.objectContaining({ type: 'number', minimum: 1, maximum: 5 }));
    expect(schemaOf('limit')).toEqual(expect.objectContaining({ type: 'integer', minimum: 1, maximum: 100, default: 20 }));
    for (const date of ['since', 'until']) expect(schemaOf(date)).toEqual(expect.objectContaining({ type: 'string', format: 'date' }));
    for (const text of ['query', 'mentions_technician', 'mentions_service']) expect(schemaOf(text)).toEqual(expect.objectContaining({ type: 'string' }));
    expect(params.every((p) => p['in'] !== 'query' || p['required'] !== true)).toBe(true);
  });

  /** The response object for an operation, following a `$ref` into components. */
  function responseOf(path: string, method: string, status: number): Json {
    const responses = (((doc['paths'] as Record<string, Json>)[path]?.[method] as Json | undefined)?.['responses'] ?? {}) as Record<string, Json>;
    const response = responses[String(status)];
    if (!response) throw new Error(`${method.toUpperCase()} ${path} documents no ${status}`);
    const ref = response['$ref'];
    if (typeof ref !== 'string') return response;
    return ref
      .slice(2)
      .split('/')
      .reduce<Json>((node, key) => node[key] as Json, doc);
  }

  /** Every header the response documents as required is sent; an optional one (Content-Encoding, absent for the identity variant) may be missing. */
  function expectRequiredHeaders(documented: Json, sent: Record<string, unknown>): void {
    for (const [header, described] of Object.entries((documented['headers'] as Record<string, { required?: boolean }> | undefined) ?? {})) {
      if (described.required === false) continue;
      expect([header, sent[header.toLowerCase()]]).toEqual([header, expect.any(String)]);
    }
  }

  it.each([
    ['/reviews.json', '/reviews.json', 200],
    ['/insights.json', '/insights.json', 200],
    ['/api/feed.json', '/api/feed.json', 200],
    ['/feed.xml', '/feed.xml', 200],
    ['/.well-known/openapi.json', '/.well-known/openapi.json', 200],
    ['/api/reviews/search', '/api/reviews/search?rating=5&limit=3', 200],
    ['/api/reviews/search', '/api/reviews/search?rating=6', 400],
    ['/api/reviews/since/{date}', '/api/reviews/since/2026-01-01', 200],
    ['/api/reviews/since/{date}', '/api/reviews/since/2025-02-30', 400],
  ])('GET %s: %s answers %i, with the documented media type, headers and body schema', async (template, path, status) => {
    const res = await send('GET', `${base}${path}`);
    expect(res.status).toBe(status);
    const documented = responseOf(template, 'get', status);
    const content = documented['content'] as Record<string, Json>;
    expect(Object.keys(content)).toEqual([res.headers['content-type']]);
    expectRequiredHeaders(documented, res.headers);
    if (res.headers['content-type'] === 'application/json') {
      const schema = content['application/json']?.['schema'] as Json;
      const validate = ajv.compile(typeof schema['$ref'] === 'string' ? { $ref: `openapi.json${schema['$ref']}` } : schema);
      if (!validate(res.json())) throw new Error(`${path}: ${ajv.errorsText(validate.errors)}`);
    }
  });

  it.each(['/reviews.json', '/api/reviews/search', '/api/reviews/since/{date}'])('GET %s documents the 304 it sends', async (template) => {
    const path = template.replace('{date}', '2026-01-01');
    const first = await send('GET', `${base}${path}`);
    const res = await send('GET', `${base}${path}`, { 'If-None-Match': first.headers['etag'] as string });
    expect(res.status).toBe(304);
    expect(responseOf(template, 'get', 304)['content']).toBeUndefined();
  });

  it.each(['/reviews.json', '/feed.xml', '/api/reviews/search'])('GET %s documents the 412 it sends for a failed If-Match', async (template) => {
    const res = await send('GET', `${base}${template}`, { 'If-Match': '"stale"' });
    expect(res.status).toBe(412);
    const schema = (responseOf(template, 'get', 412)['content'] as Record<string, Json>)['application/json']?.['schema'] as Json;
    const validate = ajv.compile({ $ref: `openapi.json${schema['$ref'] as string}` });
    expect(validate(res.json())).toBe(true);
  });

  it('POST /mcp: each documented status is what the gateway sends, with the documented media type and body schema', async () => {
    const mcp = `${base}/mcp`;
    const headers = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
    const init = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'c', version: '1' } } });
    const ok = await send('POST', mcp, headers, init);
    const session = { ...headers, 'Mcp-Session-Id': ok.headers['mcp-session-id'] as string };
    const cases: Array<[number, Promise<Awaited<ReturnType<typeof send>>>]> = [
      [200, Promise.resolve(ok)],
      [202, send('POST', mcp, session, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }))],
      [400, send('POST', mcp, headers, JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }))],
      [403, send('POST', mcp, { ...headers, Origin: 'https://elsewhere.example' }, init)],
      [404, send('POST', mcp, { ...headers, 'Mcp-Session-Id': 'forged' }, JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }))],
      [406, send('POST', mcp, { ...headers, Accept: 'text/html' }, init)],
      [413, send('POST', mcp, headers, JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'ping', params: { pad: 'x'.repeat(70_000) } }))],
      [415, send('POST', mcp, { ...headers, 'Content-Type': 'text/plain' }, init)],
      // An OpenAPI audit: both lacked a header documented as required (Vary before routing, Accept-Encoding on a media-type 415).
      [400, send('POST', `${mcp}?x=%ZZ`, headers, init)],
      [415, send('POST', mcp, { ...session, 'Content-Type': 'application/json; charset=latin1' }, JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'ping' }))],
    ];
    for (const [status, pending] of cases) {
      const res = await pending;
      expect([status, res.status]).toEqual([status, status]);
      const documented = responseOf('/mcp', 'post', status);
      expectRequiredHeaders(documented, res.headers);
      const content = documented['content'] as Record<string, Json> | undefined;
      if (content === undefined) {
        expect(res.body.length).toBe(0);
        continue;
      }
      expect(Object.keys(content)).toEqual([res.headers['content-type']]);
      const validate = ajv.compile({ $ref: `openapi.json#/paths/~1mcp/post/responses/${status}/content/application~1json/schema` });
      if (!validate(res.json())) throw new Error(`/mcp ${status}: ${ajv.errorsText(validate.errors)}`);
    }
  });

  it('POST /api/websub/hub: 202, 400, 405 and 415 as documented, text/plain; charset=utf-8', async () => {
    const hub = `${base}/api/websub/hub`;
    const form = { 'Content-Type': 'application/x-www-form-urlencoded' };
    const cases: Array<[number, string, Record<string, string>, string | undefined]> = [
      [202, 'POST', form, new URLSearchParams({ 'hub.mode': 'unsubscribe', 'hub.topic': `${base}/feed.xml`, 'hub.callback': 'https://subscriber.invalid/cb' }).toString()],
      [400, 'POST', form, 'hub.mode=subscribe'],
      [405, 'GET', {}, undefined],
      [415, 'POST', { 'Content-Type': 'application/json' }, '{}'],
    ];
    for (const [status, method, headers, body] of cases) {
      const res = await send(method, hub, headers, body);
      expect([status, res.status]).toEqual([status, status]);
      // The 405 is what any method but POST gets: it is documented on the GET operation.
      const content = responseOf('/api/websub/hub', method.toLowerCase(), status)['content'] as Record<string, Json>;
      // A 400 may also be the JSON envelope of a malformed request target, refused before routing.
      const textPlain = 'text/plain; charset=utf-8';
      expect(Object.keys(content)).toEqual(status === 400 ? [textPlain, 'application/json'] : [textPlain]);
      // Byte-exact, as the document names it.
      expect(res.headers['content-type']).toBe(textPlain);
    }
  });

  it('the 404 of an unknown path matches the documented NotFound response', async () => {
    const res = await send('GET', `${base}/nowhere`);
    const notFound = (doc['components'] as Json)['responses'] as Record<string, Json>;
    const validate = ajv.compile({ $ref: 'openapi.json#/components/responses/NotFound/content/application~1json/schema' });
    expect(notFound['NotFound']).toBeDefined();
    expect(validate(res.json())).toBe(true);
  });
});

describe('GET /insights.json holds the groups of interface spec §2', () => {
  it('has aspects, entities (technicians, services, service areas), topics, faq and a summary', async () => {
    const insights = await getJson('/insights.json');
    expect(Array.isArray(insights['aspects'])).toBe(true);
    expect(Object.keys(insights['entities'] as Json)).toEqual(expect.arrayContaining(['technicians', 'services', 'service_areas']));
    expect(Array.isArray(insights['topics'])).toBe(true);
    expect(Array.isArray(insights['faq'])).toBe(true);
    expect(insights['review_count']).toBe(((await getJson('/reviews.json'))['reviews'] as unknown[]).length);
    expect('summary' in insights).toBe(true);
  });
});

describe('before any dataset is loaded', () => {
  // The OpenAPI document is itself a representation of the dataset version (its Last-Modified), so it waits too.
  it('every read endpoint answers the documented 503 JSON envelope with Retry-After', async () => {
    const documented = (await getJson('/.well-known/openapi.json'))['components'] as Record<string, Record<string, Json>>;
    expect(documented['responses']?.['NotReady']?.['headers']).toHaveProperty('Retry-After');
    const empty = await startStandalone({}, { withDataset: false });
    try {
      for (const { path } of READ_ENDPOINTS) {
        const res = await send('GET', `${empty.baseUrl}${path}`);
        expect([path, res.status]).toEqual([path, 503]);
        expect(res.headers['content-type']).toBe('application/json');
        expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
        expect(res.json()).toEqual({ error: 'not_ready', message: expect.any(String) });
      }
    } finally {
      await empty.stop();
    }
  });
});
