import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { Ajv2020 } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import { pino } from 'pino';
import request from 'supertest';
import { createMetrics, startHttpService } from '@reviews/runtime';
import { close, listen, startTestApi, type TestApi } from './helpers.js';


type Json = Record<string, unknown>;

let api: TestApi;
let url: string;
let openapi: Json;
let ajv: Ajv2020;

beforeAll(async () => {
  api = startTestApi();
  url = await listen(api.server);
  openapi = (await request(url).get('/.well-known/openapi.json')).body as Json;
  ajv = new Ajv2020({ strict: false, allErrors: true });
  // ajv-formats is CommonJS: under NodeNext its default export is the module object.
  formats.default(ajv);
  ajv.addSchema(openapi, 'openapi.json');
});
afterAll(() => close(api.server));

/** JSON Pointer escaping of a path template used as a key under `paths`. */
const pointer = (segment: string) => segment.replace(/~/g, '~0').replace(/\//g, '~1');

/** Pointer (inside the document) to the JSON schema of a response, following a `$ref` to components. */
function responseSchemaPointer(template: string, status: number): string {
  const operation = ((openapi.paths as Json)[template] as Json | undefined)?.get as Json | undefined;
  if (!operation) throw new Error(`the OpenAPI document has no GET ${template}`);
  const response = (operation.responses as Json)[String(status)] as Json | undefined;
  if (!response) throw new Error(`the OpenAPI document declares no ${status} for GET ${template}`);
  const base = typeof response.$ref === 'string' ? response.$ref.slice(1) : `/paths/${pointer(template)}/get/responses/${status}`;
  return `${base}/content/application~1json/schema`;
}

function expectConforms(template: string, status: number, body: unknown): void {
  const validate = ajv.compile({ $ref: `openapi.json#${responseSchemaPointer(template, status)}` });
  if (!validate(body)) throw new Error(`${template} ${status}: ${ajv.errorsText(validate.errors)}`);
}

describe('live responses conform to /.well-known/openapi.json', () => {
  it('is OpenAPI 3.1.0, info version 1.0.0', () => {
    expect(openapi.openapi).toBe('3.1.0');
    expect((openapi.info as Json).version).toBe('1.0.0');
  });

  it.each([
    ['/reviews.json', '/reviews.json'],
    ['/insights.json', '/insights.json'],
    ['/api/feed.json', '/api/feed.json'],
    ['/api/reviews/search', '/api/reviews/search'],
    ['/api/reviews/search', '/api/reviews/search?min_rating=4&query=the&limit=5'],
    ['/api/reviews/search', '/api/reviews/search?query=zzzzzz'],
    ['/api/reviews/since/{date}', '/api/reviews/since/2024-06-01'],
  ])('200 of %s (%s)', async (template, path) => {
    const res = await request(url).get(path);
    expect(res.status).toBe(200);
    expectConforms(template, 200, res.body);
  });

  it.each([
    ['/api/reviews/search', '/api/reviews/search?limit=500&colour=red'],
    ['/api/reviews/since/{date}', '/api/reviews/since/2025-02-30'],
  ])('400 of %s (%s)', async (template, path) => {
    const res = await request(url).get(path);
    expect(res.status).toBe(400);
    expectConforms(template, 400, res.body);
  });

  it('the probes and the request-target errors match their documented responses', async () => {
    const probes = await startHttpService({ service: 'test', port: 0, metricsPort: 0, host: '127.0.0.1', shutdownTimeoutMs: 1000, logger: pino({ level: 'silent' }), metrics: createMetrics(), handler: (_req, res) => res.end(), readiness: () => ({ ready: false, version: null, publishedAt: null, source: { connected: false, detail: 'no file' }, lastRejection: null }) });
    try {
      const conforms = (schemaPointer: string, body: unknown) => {
        const validate = ajv.compile({ $ref: `openapi.json#${schemaPointer}` });
        if (!validate(body)) throw new Error(`${schemaPointer}: ${ajv.errorsText(validate.errors)}`);
      };
      const health = await request(probes.url).get('/healthz');
      conforms(responseSchemaPointer('/healthz', 200), health.body);
      const ready = await request(probes.url).get('/readyz');
      expect(ready.status).toBe(503);
      conforms(responseSchemaPointer('/readyz', 503), ready.body);
      const tooLong = await request(url).get(`/reviews.json?${'a'.repeat(9000)}`);
      expect(tooLong.status).toBe(414);
      conforms('/components/responses/UriTooLong/content/application~1json/schema', tooLong.body);
      const options = await request(url).options('/reviews.json');
      expect(options.status).toBe(204);
      expect(((openapi.paths as Json)['/reviews.json'] as Json).options).toBeDefined();
    } finally {
      await probes.shutdown('test done');
    }
  });

  it('206 and 416 of a byte range carry the headers their responses require, and the 416 its envelope', async () => {
    const headerSchema = (name: string) => ajv.compile({ $ref: `openapi.json#/components/headers/${pointer(name)}/schema` });
    for (const template of ['/reviews.json', '/api/feed.json', '/feed.xml']) {
      // A slice of JSON is no JSON: read it as bytes.
      const partial = await request(url).get(template).set('Range', 'bytes=0-99').responseType('blob');
      expect([template, partial.status]).toEqual([template, 206]);
      const declared = ((((openapi.paths as Json)[template] as Json).get as Json).responses as Json)['206'] as Json;
      for (const name of Object.keys(declared.headers as Json)) {
        const value = partial.headers[name.toLowerCase()];
        expect([template, name, typeof value]).toEqual([template, name, 'string']);
        if (name === 'Content-Range' || name === 'Accept-Ranges') expect([name, headerSchema(name)(value)]).toEqual([name, true]);
      }
    }
    const unsatisfiable = await request(url).get('/reviews.json').set('Range', 'bytes=999999999-');
    expect(unsatisfiable.status).toBe(416);
    expect(headerSchema('Content-Range')(unsatisfiable.headers['content-range'])).toBe(true);
    expectConforms('/reviews.json', 416, unsatisfiable.body);
  });

  it('404 of an unknown path matches the NotFound response', async () => {
    const res = await request(url).get('/reviews.json/nope');
    expect(res.status).toBe(404);
    const validate = ajv.compile({ $ref: 'openapi.json#/components/responses/NotFound/content/application~1json/schema' });
    expect(validate(res.body)).toBe(true);
  });
});

describe('examples in /.well-known/openapi.json', () => {
  /** Every JSON Schema `examples` list (an array: a Media Type's `examples` is a map) and the pointer of the schema holding it. */
  function schemaExamples(node: unknown, at: string, found: [string, unknown[]][] = []): [string, unknown[]][] {
    if (node === null || typeof node !== 'object') return found;
    const object = node as Json;
    if (Array.isArray(object.examples)) found.push([at, object.examples]);
    for (const [key, child] of Object.entries(object)) schemaExamples(child, `${at}/${pointer(key)}`, found);
    return found;
  }

  it('every schema example validates against the schema that carries it', () => {
    const examples = schemaExamples(openapi, '');
    expect(examples.length).toBeGreaterThan(5);
    for (const [at, values] of examples) {
      const validate = ajv.compile({ $ref: `openapi.json#${at}` });
      for (const value of values) if (!validate(value)) throw new Error(`example ${JSON.stringify(value)} at ${at}: ${ajv.errorsText(validate.errors)}`);
    }
  });

  it('schemas use the JSON Schema keyword `examples`, not OpenAPI 3.0\'s `example`', () => {
    const schemas = JSON.stringify((openapi.components as Json).schemas);
    expect(schemas).not.toContain('"example":');
  });
});
