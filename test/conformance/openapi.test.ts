import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Ajv2020 } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import { send, startStandalone, type Standalone } from './harness.js';

/** GET /.well-known/openapi.json against what the running service answers, method by method. */
let server: Standalone;
let paths: Record<string, Record<string, Operation | undefined>>;
let ajv: Ajv2020;
beforeAll(async () => {
  server = await startStandalone();
  const document = (await send('GET', `${server.baseUrl}/.well-known/openapi.json`)).json() as { paths: typeof paths };
  paths = document.paths;
  ajv = new Ajv2020({ strict: false, allErrors: true });
  // ajv-formats is CommonJS: under NodeNext its default export is the module object.
  formats.default(ajv);
  ajv.addSchema(document, 'openapi.json');
}, 30_000);
afterAll(() => server.stop());

type Response = { $ref?: string; headers?: Record<string, unknown>; content?: Record<string, unknown> };
type Operation = { responses: Record<string, Response | undefined> };

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

  /** Headers of every answer that the document describes once, in its introduction, rather than per operation. */
  const HTTP_FRAMING_AND_CORS = new Set(['date', 'connection', 'keep-alive', 'content-length', 'content-type', 'transfer-encoding', 'access-control-allow-origin', 'access-control-expose-headers']);

  it('HEAD on every GET path answers the GET status with the documented headers and no body', async () => {
    const gets = Object.keys(paths).filter((template) => paths[template]?.['get']?.responses['200'] !== undefined);
    expect(gets).toEqual(expect.arrayContaining(['/reviews.json', '/api/reviews/search', '/api/reviews/since/{date}', '/healthz']));
    for (const template of gets) {
      const res = await send('HEAD', `${server.baseUrl}${concrete(template)}`);
      expect([template, res.status, res.body.length]).toEqual([template, 200, 0]);
      const headers = (paths[template]?.['head']?.responses['200']?.headers ?? {}) as Record<string, { required?: boolean }>;
      const documented = Object.keys(headers);
      expect([template, documented]).toEqual([template, Object.keys(paths[template]?.['get']?.responses['200']?.headers ?? {})]);
      for (const header of documented.filter((name) => headers[name]?.required !== false)) expect([template, header, res.headers[header.toLowerCase()]]).toEqual([template, header, expect.any(String)]);
      // An audit: headers sent but described nowhere (Cache-Control on probes) are invisible to clients generated from the document.
      const described = new Set(documented.map((name) => name.toLowerCase()));
      for (const sent of Object.keys(res.headers)) if (!HTTP_FRAMING_AND_CORS.has(sent)) expect([template, sent, described.has(sent)]).toEqual([template, sent, true]);
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

/**
 * One request written as raw bytes on its own connection (a request line node:http would not send), answered
 * whole; with `endsWriting: false` the connection stays open for writing, as a client still sending its headers.
 */
function rawExchange(url: string, request: string, { endsWriting = true, timeoutMs = 10_000 } = {}): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let answer = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (answer += chunk));
    socket.on('error', reject);
    socket.on('close', () => resolve({ status: Number(answer.slice(9, 12)), body: answer.slice(answer.indexOf('\r\n\r\n') + 4) }));
    socket.setTimeout(timeoutMs, () => socket.destroy(new Error(`no answer to ${JSON.stringify(request.slice(0, 40))}`)));
    if (endsWriting) socket.end(request);
    else socket.write(request);
  });
}

/** What the server refuses before routing, whatever the path and method (libs/runtime http/server.ts). */
const REFUSALS_BEFORE_ROUTING = [
  { status: 400, why: 'a query escape without two hex digits', request: (method: string, path: string) => `${method} ${path}?%zz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n` },
  { status: 414, why: 'a target over 8 KiB', request: (method: string, path: string) => `${method} ${path}?${'a'.repeat(9000)} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n` },
  { status: 417, why: 'an Expect other than 100-continue', request: (method: string, path: string) => `${method} ${path} HTTP/1.1\r\nHost: x\r\nExpect: nope\r\nConnection: close\r\n\r\n` },
  { status: 431, why: 'a header block over 16 KiB', request: (method: string, path: string) => `${method} ${path} HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(17_000)}\r\nConnection: close\r\n\r\n` },
  { status: 501, why: 'a transfer coding other than chunked', request: (method: string, path: string) => `${method} ${path} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n0\r\n\r\n` },
  { status: 505, why: 'HTTP/2.0 on a text connection', request: (method: string, path: string) => `${method} ${path} HTTP/2.0\r\nHost: x\r\n\r\n` },
];

describe('the refusals before routing, on every operation', () => {
  it('each is a status the operation declares, with a body its schema for that status describes', async () => {
    // The body schema's place in the document: in the shared response it refers to, or in the operation.
    const pointer = (segment: string) => segment.replaceAll('~', '~0').replaceAll('/', '~1');
    const schemaAt = (template: string, method: string, status: number, response: Response) =>
      `openapi.json#${response.$ref?.slice(1) ?? `/paths/${pointer(template)}/${method}/responses/${status}`}/content/application~1json/schema`;
    let checked = 0;
    for (const [template, item] of Object.entries(paths)) {
      for (const method of METHODS.map((m) => m.toLowerCase()).filter((m) => item[m] !== undefined)) {
        for (const refusal of REFUSALS_BEFORE_ROUTING) {
          const answer = await rawExchange(server.baseUrl, refusal.request(method.toUpperCase(), concrete(template)));
          const response = item[method]?.responses[String(answer.status)];
          expect({ method, template, refusal: refusal.why, status: answer.status, declared: response !== undefined }).toEqual({ method, template, refusal: refusal.why, status: refusal.status, declared: true });
          if (method === 'head' || response === undefined) continue;
          const validate = ajv.compile({ $ref: schemaAt(template, method, answer.status, response) });
          expect({ method, template, refusal: refusal.why, valid: validate(JSON.parse(answer.body)) || ajv.errorsText(validate.errors) }).toEqual({ method, template, refusal: refusal.why, valid: true });
          checked++;
        }
      }
    }
    expect(checked).toBeGreaterThan(100);
  }, 60_000);
});

/** A request whose headers never end, on its own connection: the status and body the server answers once it stops waiting. */
function headersNeverEnding(url: string, request: string): Promise<{ status: number; body: string }> {
  return rawExchange(url, request, { endsWriting: false, timeoutMs: 20_000 });
}

// The HTTP-semantics audit: the server answers 408 on any path, and no operation listed it.
describe('the request timeout before routing, on every operation', () => {
  it('headers that stop arriving get a 408 the operation declares, with no content', async () => {
    const operations = Object.entries(paths).flatMap(([template, item]) => METHODS.map((m) => m.toLowerCase()).filter((method) => item[method] !== undefined).map((method) => ({ template, method })));
    // Together: each waits out the server's 10 s for the headers.
    const answers = await Promise.all(operations.map(async ({ template, method }) => ({ template, method, ...(await headersNeverEnding(server.baseUrl, `${method.toUpperCase()} ${concrete(template)} HTTP/1.1\r\nHost: x\r\n`)) })));
    for (const { template, method, status, body } of answers) {
      const declared = paths[template]?.[method]?.responses[String(status)] !== undefined;
      expect({ method, template, status, declared, body }).toEqual({ method, template, status: 408, declared: true, body: '' });
    }
    expect(answers.length).toBeGreaterThan(30);
  }, 30_000);
});

describe('the hub form schema accepts a subscription exactly when the hub does', () => {
  /** ASCII secrets only: JSON Schema counts characters, the hub bytes (the schema's description says so). */
  it.each([
    ['hub.lease_seconds', ['1', '86400', '007', '99999999999999999999', '0', '000', '-5', '1.5', '1e3', 'week', '']],
    ['hub.secret', ['s', 'x'.repeat(199), 'x'.repeat(200), '']],
  ])('%s', async (field, values) => {
    const validate = ajv.getSchema('openapi.json#/components/schemas/WebSubSubscriptionRequest')!;
    for (const value of values) {
      const form = { 'hub.mode': 'subscribe', 'hub.topic': `${server.baseUrl}/reviews.json`, 'hub.callback': 'https://subscriber.example/callback', [field]: value };
      const res = await send('POST', `${server.baseUrl}/api/websub/hub`, { 'Content-Type': 'application/x-www-form-urlencoded' }, new URLSearchParams(form).toString());
      expect([value, res.status]).toEqual([value, validate(form) ? 202 : 400]);
    }
  });
});
