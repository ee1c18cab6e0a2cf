import { describe, expect, it } from '@jest/globals';
import SwaggerParser from '@apidevtools/swagger-parser';
import { Ajv2020 } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import { buildOpenApiDocument, renderJsonFeed, searchParamsShape } from '@reviews/domain';
import { sampleDocument, URLS } from './sample-document.js';

/** The operation fields of an OAS 3.1 Path Item Object. */
const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
type Method = (typeof HTTP_METHODS)[number];

type Parameter = { name?: string; in?: string; required?: boolean; schema?: Record<string, unknown>; $ref?: string };
type Response = { $ref?: string; description?: string; headers?: Record<string, unknown>; content?: Record<string, unknown> };
type Operation = { operationId?: string; parameters?: Parameter[]; responses: Record<string, Response> };
type PathItem = { parameters?: Parameter[] } & { [method in Method]?: Operation };
type Document = {
  openapi: string;
  info: { version: string };
  servers: Array<{ url: string }>;
  paths: Record<string, PathItem>;
  components: { schemas: Record<string, unknown>; parameters: Record<string, Parameter>; responses: Record<string, Response> };
};

const SPEC_OPERATIONS: ReadonlyArray<readonly [string, Method]> = [
  ['/reviews.json', 'get'],
  ['/insights.json', 'get'],
  ['/api/feed.json', 'get'],
  ['/feed.xml', 'get'],
  ['/api/reviews/search', 'get'],
  ['/api/reviews/since/{date}', 'get'],
  ['/.well-known/openapi.json', 'get'],
  ['/mcp', 'post'],
  ['/api/websub/hub', 'post'],
];

const build = () => buildOpenApiDocument(URLS) as unknown as Document;

/** Validates data against a component schema of the document, so the description is checked against real output. */
function componentValidator(doc: Document, id: string) {
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  formats.default(ajv);
  ajv.addSchema({ $id: 'https://openapi.test/doc', components: doc.components });
  const validate = ajv.getSchema(`https://openapi.test/doc#/components/schemas/${id}`);
  if (validate === undefined) throw new Error(`no component ${id}`);
  return (data: unknown) => (validate(data) ? [] : validate.errors);
}

describe('buildOpenApiDocument', () => {
  it('is a valid OpenAPI 3.1.0 document, version 1.0.0, served from BASE_URL', async () => {
    const doc = build();
    await expect(SwaggerParser.validate(structuredClone(doc) as never)).resolves.toBeDefined();
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.version).toBe('1.0.0');
    expect(doc.servers).toEqual([{ url: 'https://reviews.example.com' }]);
  });

  it('resolves every path template: each {name} is an `in: path` parameter of the path item or of every operation, and no path parameter is missing from the template', () => {
    // OAS 3.1 Path Templating; swagger-parser does not check it, openapi-spec-validator does.
    const doc = build();
    const pathParameterNames = (parameters: Parameter[] = []) =>
      parameters
        .map((parameter) => (parameter.$ref === undefined ? parameter : doc.components.parameters[parameter.$ref.replace('#/components/parameters/', '')]))
        .filter((parameter) => parameter?.in === 'path')
        .map((parameter) => parameter!.name);
    for (const [path, item] of Object.entries(doc.paths)) {
      const template = [...path.matchAll(/\{([^}]+)\}/g)].map((match) => match[1]).sort();
      for (const method of HTTP_METHODS) {
        const operation = item[method];
        if (operation === undefined) continue;
        const declared = [...new Set([...pathParameterNames(item.parameters), ...pathParameterNames(operation.parameters)])].sort();
        expect([path, method, declared]).toEqual([path, method, template]);
      }
    }
  });

  it('declares HEAD beside every GET: its parameters, statuses and headers but the byte ranges (GET only), no body, an operationId of its own', () => {
    const doc = build();
    const resolve = (response: Response): Response =>
      response.$ref === undefined ? response : { ...doc.components.responses[response.$ref.replace('#/components/responses/', '')], ...(response.description === undefined ? {} : { description: response.description }) };
    const operationIds: string[] = [];
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const method of HTTP_METHODS) if (item[method]?.operationId !== undefined) operationIds.push(item[method].operationId);
      const { get, head } = item;
      if (get === undefined) {
        expect([path, head]).toEqual([path, undefined]);
        continue;
      }
      const rangeParameters = ['#/components/parameters/Range', '#/components/parameters/IfRange'];
      expect([path, head?.parameters]).toEqual([path, get.parameters?.filter((parameter) => !rangeParameters.includes(String((parameter as { $ref?: string }).$ref)))]);
      const rangeStatuses = ['206', '416'];
      expect([path, Object.keys(head?.responses ?? {})]).toEqual([path, Object.keys(get.responses).filter((status) => !rangeStatuses.includes(status))]);
      for (const [status, response] of Object.entries(get.responses).filter(([status]) => !rangeStatuses.includes(status))) {
        const headResponse = resolve(head!.responses[status]!);
        expect([path, status, headResponse.headers, headResponse.content]).toEqual([path, status, resolve(response).headers, undefined]);
      }
    }
    expect(operationIds.length).toBeGreaterThan(Object.keys(doc.paths).length);
    expect(new Set(operationIds).size).toBe(operationIds.length);
  });

  it('documents every endpoint of the interface spec', () => {
    const { paths } = build();
    for (const [path, method] of SPEC_OPERATIONS) expect(paths[path]?.[method]).toBeDefined();
  });

  it('documents 200, 206, 304, 400, 408, 412, 416, 414, 417, 431, 501, 505 and 503 on every GET (no 404: an unknown path is no operation\'s), Range and If-Range beside the preconditions, the parameter issues where it takes parameters, an OPTIONS preflight, and the hub on topics (on their 304 too)', () => {
    const { paths } = build();
    for (const [path, method] of SPEC_OPERATIONS.filter(([, m]) => m === 'get')) {
      const operation = paths[path]?.[method] as Operation;
      const takesParameters = [...(paths[path]?.parameters ?? []), ...(operation.parameters ?? [])].some((parameter) => parameter.in === 'query' || parameter.in === 'path');
      expect(Object.keys(operation.responses).sort()).toEqual(['200', '206', '304', '400', '408', '412', '414', '416', '417', '431', '501', '503', '505']);
      expect(operation.parameters?.filter((parameter) => parameter.in === undefined)).toEqual(['IfNoneMatch', 'IfModifiedSince', 'IfMatch', 'IfUnmodifiedSince', 'Range', 'IfRange'].map((name) => ({ $ref: `#/components/parameters/${name}` })));
      expect(operation.responses['400']).toMatchObject({ $ref: takesParameters ? '#/components/responses/BadRequest' : '#/components/responses/BadRequestTarget' });
      expect(Object.keys((paths[path]?.options as Operation).responses).sort()).toEqual(['204', '400', '408', '414', '417', '431', '501', '505']);
    }
    for (const [path, topic] of [['/reviews.json', URLS.reviews], ['/api/feed.json', URLS.feedJson], ['/feed.xml', URLS.feedAtom]] as const) {
      for (const status of ['200', '206', '304']) {
        const response = paths[path]?.get?.responses[status] as { headers: Record<string, { example?: string }> };
        expect(response.headers.Link?.example).toBe(`<${URLS.hub}>; rel="hub", <${topic}>; rel="self"`);
      }
    }
  });

  it('documents what the probes answer: 200, 304 and 412 for preconditions, and the refusals before routing', () => {
    const { paths } = build();
    expect(Object.keys((paths['/healthz']?.get as Operation).responses).sort()).toEqual(['200', '304', '400', '408', '412', '414', '417', '431', '501', '505']);
    expect(Object.keys((paths['/readyz']?.get as Operation).responses).sort()).toEqual(['200', '304', '400', '408', '412', '414', '417', '431', '501', '503', '505']);
  });

  it('takes the search parameters, bounds and default from searchParamsShape', () => {
    const search = build().paths['/api/reviews/search']?.get as Operation;
    const query = (search.parameters ?? []).filter((parameter) => parameter.in === 'query');
    expect(query.map((parameter) => parameter.name)).toEqual(Object.keys(searchParamsShape));
    expect(query.every((parameter) => parameter.required === false)).toBe(true);
    const byName = Object.fromEntries(query.map((parameter) => [parameter.name, parameter.schema]));
    expect(byName.rating).toMatchObject({ type: 'integer', minimum: 1, maximum: 5 });
    expect(byName.min_rating).toMatchObject({ type: 'number', minimum: 1, maximum: 5 });
    expect(byName.since).toMatchObject({ type: 'string', format: 'date' });
    expect(byName.limit).toMatchObject({ type: 'integer', minimum: 1, maximum: 100, default: 20 });
    const since = build().paths['/api/reviews/since/{date}'];
    expect(since?.parameters).toEqual([expect.objectContaining({ name: 'date', in: 'path', required: true, schema: expect.objectContaining({ type: 'string', format: 'date' }) })]);
  });

  it('describes the documents the service really serves', () => {
    const doc = build();
    const reviews = sampleDocument();
    expect(componentValidator(doc, 'ReviewsDocument')(JSON.parse(JSON.stringify(reviews)))).toEqual([]);
    expect(componentValidator(doc, 'JsonFeed')(JSON.parse(renderJsonFeed(reviews, URLS)))).toEqual([]);
    const hub = componentValidator(doc, 'WebSubSubscriptionRequest');
    expect(hub({ 'hub.callback': 'https://subscriber.example/cb', 'hub.mode': 'subscribe', 'hub.topic': URLS.feedAtom })).toEqual([]);
    expect(hub({ 'hub.callback': 'https://subscriber.example/cb', 'hub.mode': 'subscribe', 'hub.topic': 'https://elsewhere.example/feed' })).not.toEqual([]);
  });

  // An audit: the MCP transport takes a client's JSON-RPC response (202), which the request schema refused; and GET and
  // DELETE /mcp answer a foreign Origin with 403, which only POST and OPTIONS listed.
  it('describes every message a POST to /mcp may carry, and the 403 of every /mcp method', () => {
    const doc = build();
    const validate = componentValidator(doc, 'McpRequestBody');
    expect(validate({ jsonrpc: '2.0', id: 7, result: {} })).toEqual([]);
    expect(validate({ jsonrpc: '2.0', id: 7, error: { code: -32601, message: 'no' } })).toEqual([]);
    expect(validate({ jsonrpc: '2.0', method: 'notifications/initialized' })).toEqual([]);
    expect(validate([{ jsonrpc: '2.0', id: 1, result: {} }])).toEqual([]);
    expect(validate({ jsonrpc: '2.0', id: 7 })).not.toEqual([]);
    for (const method of ['get', 'head', 'post', 'options', 'delete'] as const) {
      const operation = doc.paths['/mcp']?.[method];
      if (operation !== undefined) expect([method, operation.responses['403'] !== undefined]).toEqual([method, true]);
    }
  });

  it('is byte-stable', () => {
    expect(JSON.stringify(build())).toBe(JSON.stringify(build()));
  });
});
