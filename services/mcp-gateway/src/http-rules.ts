import { isUtf8 } from 'node:buffer';
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import express from 'express';
import { ClientRequestSchema, DEFAULT_NEGOTIATED_PROTOCOL_VERSION, JSONRPCMessageSchema, LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS, type JSONRPCMessage, type JSONRPCRequest, type RequestId } from '@modelcontextprotocol/sdk/types.js';
import { isRecord, JSON_CONTENT_TYPE, MAX_MCP_BODY_BYTES } from '@reviews/domain';
import { closeAfterLingering, weightedElements, type Logger } from '@reviews/runtime';

// The transport rules of POST /mcp that both the SDK path (express) and the tools/call fast path apply:
// one implementation of each, so the two paths cannot drift apart.

/**
 * Deepest nesting of arrays and objects in a message (a batch's elements each count alone). MCP messages nest a
 * few levels (tool arguments are flat); the SDK serializes messages recursively, and a message thousands of
 * levels deep overflowed its stack.
 */
export const MAX_MESSAGE_DEPTH = 64;
/**
 * Most values a message holds in its arrays and objects (a batch's elements each count alone). MCP messages
 * hold tens (tool arguments are a handful); the SDK's validation cost grew faster than the count, and a
 * ping carrying 6,000 keys within the body limit took 56 ms, a tools/list 91 ms (the complexity audit).
 */
export const MAX_MESSAGE_VALUES = 1000;

const EXPOSED_HEADERS = 'Mcp-Session-Id, Retry-After, Allow';
/** The Accept and Host the SDK transport is shown once the gateway has accepted a request's own (normalizeHeadersForSdk). */
const SDK_ACCEPT = 'application/json, text/event-stream';
const SDK_HOST = 'localhost';

// The failures answerBodyError answers: body-parser's own types, and the gateway's with the same shape.
/** A body that is not JSON: -32700 Parse error. */
const PARSE_FAILED = 'entity.parse.failed';
const TOO_LARGE = 'entity.too.large';
const CHARSET_UNSUPPORTED = 'charset.unsupported';
const NOT_UTF8 = 'entity.not.utf8';
const TOO_DEEP = 'entity.too.deep';
const TOO_MANY_VALUES = 'entity.too.wide';

function bodyError(type: string, details: { readonly charset?: string; readonly id?: RequestId | null } = {}): Error {
  return Object.assign(new Error(type), { type, ...details });
}

/** An empty body is no more JSON text than one of spaces; body-parser would read it as `{}`, an Invalid Request. */
function emptyBodyError(): Error {
  return Object.assign(new SyntaxError('Unexpected end of JSON input'), { type: PARSE_FAILED });
}

const readJsonBody = express.json({
  limit: MAX_MCP_BODY_BYTES,
  strict: false,
  // Called with the body as read and decoded from its Content-Encoding, before body-parser decodes its charset
  // (lower case, utf-8 when the Content-Type names none) and parses it.
  verify: (_req, _res, body, charset) => {
    // RFC 8259 §8.1: JSON exchanged between systems is UTF-8. body-parser decodes any "utf-" charset (utf-16le, utf-7).
    if (charset !== 'utf-8') throw bodyError(CHARSET_UNSUPPORTED, { charset });
    if (body.length === 0) throw emptyBodyError();
    // body-parser would decode an invalid byte as U+FFFD, so a tool would see text the client never sent.
    if (!isUtf8(body)) throw bodyError(NOT_UTF8);
  },
});

function isContainer(value: unknown): value is object {
  return typeof value === 'object' && value !== null;
}

/**
 * What is wrong with the shape of a message, if anything: arrays and objects nested more than MAX_MESSAGE_DEPTH
 * deep, or holding more than MAX_MESSAGE_VALUES values. Walked with a stack of its own, so no depth can overflow
 * the call stack; runs on every body, so it allocates nothing per level (~0.4 µs for a tools/call).
 */
function shapeError(message: unknown): typeof TOO_DEEP | typeof TOO_MANY_VALUES | null {
  const containers: object[] = [];
  const depths: number[] = [];
  const enter = (item: unknown, depth: number) => {
    if (isContainer(item)) {
      containers.push(item);
      depths.push(depth);
    }
  };
  enter(message, 1);
  let values = 0;
  while (containers.length > 0) {
    const container = containers.pop() as object;
    const depth = depths.pop() as number;
    if (depth > MAX_MESSAGE_DEPTH) return TOO_DEEP;
    const items = Array.isArray(container) ? container : Object.values(container);
    values += items.length;
    if (values > MAX_MESSAGE_VALUES) return TOO_MANY_VALUES;
    for (const item of items) enter(item, depth + 1);
  }
  return null;
}

/** The failure of a parsed body, if any: empty, or a message (a batch's element) nested too deep or holding too many values. */
function parsedBodyError(body: unknown): Error | undefined {
  if (body === undefined) return emptyBodyError();
  const messages: unknown[] = Array.isArray(body) ? body : [body];
  for (const message of messages) {
    const error = shapeError(message);
    // A batch is refused as a whole, so no one element's id answers for it.
    if (error !== null) return bodyError(error, { id: Array.isArray(body) ? null : refusedRequestId(message) });
  }
  return undefined;
}

/**
 * The one JSON body parser (a connect middleware, so it also runs on a bare node:http request). Not
 * strict: `1`, `null` or `"hi"` are valid JSON, so they must reach the JSON-RPC check and get -32600
 * Invalid Request, not the -32700 Parse error strict mode would throw (JSON-RPC 2.0 §5.1). An empty body,
 * including a request without Content-Length or Transfer-Encoding (RFC 9112 §6.3: its body is empty), is
 * a -32700 Parse error, as a body of spaces is; a body that is not UTF-8 too. A message nested deeper than
 * MAX_MESSAGE_DEPTH is refused before anything else looks at it.
 *
 * A body over MAX_MCP_BODY_BYTES on the wire is refused as soon as that is known, from its Content-Length or once
 * that many bytes of a chunked body arrived: body-parser reads such a body to its end before failing, and a
 * client can declare gigabytes or send chunks forever (answerBodyError then closes the connection).
 */
export function parseJsonBody(req: IncomingMessage & { body?: unknown }, res: ServerResponse, next: (error?: unknown) => void): void {
  if (Number(req.headers['content-length']) > MAX_MCP_BODY_BYTES) return next(bodyError(TOO_LARGE));
  let settled = false;
  const settle = (error?: unknown) => {
    if (settled) return;
    settled = true;
    next(error);
  };
  readJsonBody(req, res, (error?: unknown) => settle(error ?? parsedBodyError(req.body)));
  // Settled at once: the body was read before (the fast path declined the request), is absent, or is refused unread.
  if (settled) return;
  let received = 0;
  req.on('data', (chunk: Buffer) => {
    received += chunk.length;
    if (received > MAX_MCP_BODY_BYTES) settle(bodyError(TOO_LARGE));
  });
}

/** The first MCP version without JSON-RPC batches (its changelog: "Remove support for JSON-RPC batching"). */
const FIRST_VERSION_WITHOUT_BATCHES = '2025-06-18';

/** The lists this server serves: each is answered whole, without nextCursor, so it never issued a cursor. */
const UNPAGINATED_LISTS = new Set(['tools/list', 'prompts/list', 'resources/list', 'resources/templates/list']);

/**
 * The request methods this server answers. The others (completion/complete, logging/setLevel,
 * resources/subscribe, tasks/*) belong to capabilities it does not declare, so they get -32601 Method not
 * found (JSON-RPC 2.0 §5.1: "does not exist / is not available") whatever their params.
 */
export const SERVED_METHODS: ReadonlySet<string> = new Set(['initialize', 'ping', 'tools/list', 'tools/call', 'prompts/list', 'prompts/get', 'resources/list', 'resources/templates/list', 'resources/read']);

/** The schema of each MCP request method this server answers, by method name. */
const REQUEST_SCHEMAS = new Map<string, (typeof ClientRequestSchema.options)[number]>(
  ClientRequestSchema.options.filter((schema) => SERVED_METHODS.has(schema.shape.method.value)).map((schema) => [schema.shape.method.value, schema]),
);

/**
 * JSON-RPC 2.0 "Invalid params" (-32602) message for a served method whose params do not fit its schema,
 * else null. The SDK would throw the raw zod error from inside its handler, answered as -32603 Internal error.
 * A list request with a cursor is invalid too: MCP 2025-06-18 (server/utilities/pagination) says an invalid
 * cursor SHOULD get -32602, and every cursor is invalid here; the SDK would ignore it and list everything.
 */
export function invalidParams(message: JSONRPCRequest): string | null {
  const result = REQUEST_SCHEMAS.get(message.method)?.safeParse(message);
  if (result === undefined) return null;
  if (!result.success) {
    const problems = result.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
    return `Invalid params for ${message.method}: ${problems.join('; ')}`;
  }
  if (UNPAGINATED_LISTS.has(message.method) && message.params?.['cursor'] !== undefined) {
    return `Invalid params for ${message.method}: params.cursor: not a cursor this server issued (it answers every list in one page, without nextCursor)`;
  }
  return null;
}

/** The members JSON-RPC 2.0 defines for a request, notification or response. */
const JSON_RPC_MEMBERS: readonly string[] = ['jsonrpc', 'id', 'method', 'params', 'result', 'error'];

/**
 * The JSON-RPC message a body or batch element holds, as this server answers it (withoutTaskAugmentation),
 * or null when it holds none. Members JSON-RPC 2.0 does not define are dropped: the MCP schema allows them
 * (no message of schema.json sets additionalProperties: false), but the SDK's strict schemas refused such a
 * request with an id-less -32600 its client could not match to it.
 */
export function parseMessage(value: unknown): JSONRPCMessage | null {
  const parsed = JSONRPCMessageSchema.safeParse(withJsonRpcMembersOnly(value));
  return parsed.success ? withoutTaskAugmentation(parsed.data) : null;
}

/** A JSON-RPC id this server can answer with as it came: a string, or an integer JSON parsers keep exactly (RFC 8259 §6). */
function isRequestId(id: unknown): id is RequestId {
  return typeof id === 'string' || Number.isSafeInteger(id);
}

/**
 * The id to answer a refused message with: its own when it is a request whose id can be read, so its client can
 * match the error to it (JSON-RPC 2.0 §5 wants null only when the id cannot be detected, and MCP's schema gives
 * an error response a string or integer id); null otherwise. A response's id names the server's request, never
 * one of the client's, so a refused response gets null.
 */
export function refusedRequestId(value: unknown): RequestId | null {
  if (!isRecord(value) || !Object.hasOwn(value, 'method')) return null;
  return isRequestId(value.id) ? value.id : null;
}

/** Why a value parseMessage refused is no JSON-RPC message, naming the member at fault where one is. */
export function invalidMessageReason(value: unknown): string {
  if (!isRecord(value)) return 'a JSON-RPC message is a JSON object';
  if (value.jsonrpc !== '2.0') return '"jsonrpc" must be "2.0"';
  if (Object.hasOwn(value, 'id') && !isRequestId(value.id)) {
    return '"id" must be a string or an integer from -(2^53 - 1) to 2^53 - 1';
  }
  const isResponse = Object.hasOwn(value, 'result') || Object.hasOwn(value, 'error');
  if (Object.hasOwn(value, 'method')) {
    if (isResponse) return 'a message holds "method" (a request or notification) or "result" or "error" (a response), never both';
    if (typeof value.method !== 'string') return '"method" must be a string';
    if (Object.hasOwn(value, 'params') && !isRecord(value.params)) return '"params" must be an object: MCP passes parameters by name';
  } else if (!isResponse) {
    return 'a message needs "method" (a request or notification), or "result" or "error" (a response)';
  } else if (!Object.hasOwn(value, 'id')) {
    return 'a response needs the "id" of the request it answers';
  } else if (Object.hasOwn(value, 'result') && Object.hasOwn(value, 'error')) {
    return 'a response holds "result" or "error", never both';
  } else if (Object.hasOwn(value, 'result') && !isRecord(value.result)) {
    return '"result" must be an object';
  } else if (Object.hasOwn(value, 'error') && !(isRecord(value.error) && Number.isSafeInteger(value.error.code) && typeof value.error.message === 'string')) {
    return '"error" must be an object with an integer "code" and a string "message"';
  }
  return 'not a JSON-RPC 2.0 request, notification or response';
}

function withJsonRpcMembersOnly(value: unknown): unknown {
  if (!isRecord(value) || Object.keys(value).every((key) => JSON_RPC_MEMBERS.includes(key))) return value;
  const kept: Record<string, unknown> = {};
  for (const key of JSON_RPC_MEMBERS) if (Object.hasOwn(value, key)) kept[key] = value[key];
  return kept;
}

/**
 * The message as this server answers it. MCP tasks (2025-11-25, basic/utilities/tasks): a receiver that does not
 * declare the tasks capability for a request type MUST process such requests normally, ignoring any task
 * augmentation. This server declares none, but the SDK it runs answers a tools/call with `params.task` -32603.
 */
function withoutTaskAugmentation(message: JSONRPCMessage): JSONRPCMessage {
  if (!('params' in message) || message.params === undefined || !Object.hasOwn(message.params, 'task')) return message;
  const { task: _ignored, ...params } = message.params;
  return { ...message, params } as JSONRPCMessage;
}

/** The protocol version a request after initialize speaks, or why it is refused with 400. */
export type RequestVersion = { readonly version: string } | { readonly refusal: string };

/**
 * The protocol version of a request after initialize (MCP 2025-06-18 basic/transports "Protocol Version
 * Header"): its MCP-Protocol-Version header, which must be a version this server supports and the one its
 * session negotiated (basic/lifecycle: both parties MUST respect it); without the header, the negotiated
 * version, as the spec prefers, or 2025-03-26 for a session whose id does not record one.
 */
export function requestProtocolVersion(header: string | string[] | undefined, negotiated: string | null): RequestVersion {
  if (header === undefined) return { version: negotiated ?? DEFAULT_NEGOTIATED_PROTOCOL_VERSION };
  if (typeof header !== 'string' || !SUPPORTED_PROTOCOL_VERSIONS.includes(header)) {
    return { refusal: `Bad Request: Unsupported protocol version: ${String(header)} (supported versions: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')})` };
  }
  if (negotiated !== null && header !== negotiated) {
    return { refusal: `Bad Request: MCP-Protocol-Version ${header} is not the version this session negotiated (${negotiated}); send ${negotiated}, or initialize a new session` };
  }
  return { version: header };
}

/** The version the SDK's server answers an initialize with: the client's when supported, else its latest. */
export function negotiatedProtocolVersion(requested: string): string {
  return SUPPORTED_PROTOCOL_VERSIONS.includes(requested) ? requested : LATEST_PROTOCOL_VERSION;
}

/**
 * Whether a protocol version has JSON-RPC batches: up to 2025-03-26 a server MUST accept them, 2025-06-18
 * removed them. Versions are dates, so they compare as strings (as the SDK compares them).
 */
export function allowsBatches(version: string): boolean {
  return version < FIRST_VERSION_WITHOUT_BATCHES;
}

/** A JSON-RPC error response as the gateway sends it: `id` is null when the request's id is unknown (JSON-RPC 2.0 §5). */
export interface RpcErrorResponse {
  readonly jsonrpc: '2.0';
  readonly error: { readonly code: number; readonly message: string };
  readonly id: RequestId | null;
}

/** Keys in the order every error of the gateway is sent in. */
export function rpcErrorResponse(code: number, message: string, id: RequestId | null): RpcErrorResponse {
  return { jsonrpc: '2.0', error: { code, message }, id };
}

/** A JSON-RPC answer as the SDK sends one: no CORS or Cache-Control of the read API's own JSON (runtime sendJson). */
export function sendRpcJson(res: ServerResponse, status: number, value: unknown): void {
  sendRpcBody(res, status, Buffer.from(JSON.stringify(value)));
}

/** sendRpcJson for an answer already serialized. */
export function sendRpcBody(res: ServerResponse, status: number, body: Buffer): void {
  // Plain node:http calls: express's res.json/res.set would send "application/json; charset=utf-8" and a
  // weak ETag, unlike the SDK's answers and every other JSON response of the service.
  res.statusCode = status;
  res.setHeader('Content-Type', JSON_CONTENT_TYPE);
  res.setHeader('Content-Length', body.length);
  res.end(body);
}

export function rpcError(res: ServerResponse, status: number, code: number, message: string, id: RequestId | null = null): void {
  sendRpcJson(res, status, rpcErrorResponse(code, message, id));
}

/**
 * Whether an Accept header accepts both media types MCP streamable HTTP requires. Each must be named
 * (a wildcard is not enough, ADR 0003), compared case-insensitively (RFC 9110 §8.3.1), in a media range
 * whose weight is not 0 (RFC 9110 §12.4.2: q=0 means "not acceptable", and a malformed weight voids the
range, as for Accept-Encoding); other parameters are ignored.
 */
export function acceptsMcpResponses(accept: string | undefined): boolean {
  const accepted = new Set(weightedElements(accept ?? '').flatMap(([type, q]) => (q > 0 ? [type] : [])));
  return accepted.has('application/json') && accepted.has('text/event-stream');
}

/**
 * Shows the SDK transport a plain Accept and Host once the gateway has accepted the request's own. The transport
 * checks Accept again by case-sensitive substring, so it would refuse `Application/JSON` with 406, and the
 * gateway's rule must be the only one. It builds a URL from Host (through @hono/node-server) and answers an empty
 * 400 when there is none (HTTP/1.0 needs none, RFC 9112 §3.2) or when the URL parser writes the host otherwise
 * (`[::ffff:127.0.0.1]`, which RFC 3986 §3.2.2 allows): the server already checked Host, and nothing the SDK does
 * for the gateway reads it. The transport reads the raw header lines, node and express read `req.headers`: both
 * are rewritten.
 */
export function normalizeHeadersForSdk(req: IncomingMessage): void {
  const rawHeaders: string[] = [];
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    const [name, value] = [req.rawHeaders[i] as string, req.rawHeaders[i + 1] as string];
    const lowerCase = name.toLowerCase();
    if (lowerCase !== 'accept' && lowerCase !== 'host') rawHeaders.push(name, value);
  }
  rawHeaders.push('Host', SDK_HOST, 'Accept', SDK_ACCEPT);
  req.rawHeaders = rawHeaders;
  req.headers.host = SDK_HOST;
  req.headers.accept = SDK_ACCEPT;
}

/**
 * What every answer of the gateway varies by (RFC 9110 §12.5.5): Origin, even when a request has none (the
 * Fetch standard's "CORS protocol and HTTP caches"), and Accept-Encoding, as memoized answers go out gzipped
 * to those who accept it (gzip-answers.ts).
 */
const VARY = 'Origin, Accept-Encoding';

/**
 * No answer of the gateway is for a cache: a shared one kept a GET's 405 (cacheable by default, RFC
 * 9110 §15.5.6) or an Origin's 403 and served it to everyone.
 */
export function markUncacheable(res: ServerResponse): void {
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Vary', VARY);
}

/** CORS headers for an allowed browser origin, on every answer (errors included), so a page can read the session id. */
export function exposeToOrigin(res: ServerResponse, origin: string): void {
  res.setHeader('Vary', VARY);
  res.setHeader('Access-Control-Allow-Origin', origin);
  res.setHeader('Access-Control-Expose-Headers', EXPOSED_HEADERS);
}

/** What body-parser passes on when it cannot read a body (an http-errors error; `charset`/`encoding` name the culprit). */
export interface BodyError {
  readonly type?: string;
  /** The refused request's id, where it could be read. */
  readonly id?: RequestId | null;
  readonly status?: number;
  readonly charset?: string;
  readonly encoding?: string;
}

/** The content codings body-parser decodes (zstd since Node 23.8; the service needs Node 24). */
const CONTENT_CODINGS = 'gzip, deflate, br, zstd or identity';
const ACCEPTED_CODINGS = 'gzip, deflate, br, zstd, identity';

/**
 * Body-parser failures as JSON-RPC errors, never express's HTML page, each message led by its status's reason
 * phrase and saying what to send instead, never body-parser's internal error codes.
 */
export function answerBodyError(error: BodyError, req: IncomingMessage, res: ServerResponse, logger: Logger): void {
  switch (error.type) {
    case PARSE_FAILED:
      return rpcError(res, 400, -32700, 'Parse error: the body is not valid JSON');
    case NOT_UTF8:
      return rpcError(res, 400, -32700, 'Parse error: the body is not valid UTF-8, which JSON text must be (RFC 8259 §8.1)');
    case TOO_DEEP:
      return rpcError(res, 400, -32600, `Invalid Request: the message nests arrays and objects more than ${MAX_MESSAGE_DEPTH} levels deep; no MCP message needs that many`, error.id);
    case TOO_MANY_VALUES:
      return rpcError(res, 400, -32600, `Invalid Request: the message holds more than ${MAX_MESSAGE_VALUES} values in its arrays and objects; no MCP message needs that many`, error.id);
    case TOO_LARGE:
      // Node would read the rest of the body, however long, to keep the connection open: close it instead.
      if (!req.complete) closeAfterLingering(req, res);
      return rpcError(res, 413, -32600, `Payload Too Large: request bodies are limited to ${MAX_MCP_BODY_BYTES} bytes`);
    case CHARSET_UNSUPPORTED:
      return rpcError(res, 415, -32000, `Unsupported Media Type: charset ${error.charset} is not supported; send UTF-8 JSON`);
    case 'encoding.unsupported':
      // RFC 9110 §15.5.16: a 415 for a content coding says which codings would do.
      res.setHeader('Accept-Encoding', ACCEPTED_CODINGS);
      return rpcError(res, 415, -32000, `Unsupported Media Type: Content-Encoding ${error.encoding} is not supported (${CONTENT_CODINGS})`);
  }
  const status = error.status !== undefined && error.status >= 400 && error.status < 500 ? error.status : 500;
  const coding = req.headers['content-encoding']?.toLowerCase() ?? 'identity';
  // Only the decompression stream fails without a type (body-parser passes zlib's error on as a 400).
  if (error.type === undefined && status === 400 && coding !== 'identity') return rpcError(res, 400, -32000, `Bad Request: the body is not valid ${coding}`);
  if (status === 500) {
    logger.error({ err: error }, 'MCP request failed');
    return rpcError(res, 500, -32603, 'Internal error');
  }
  rpcError(res, status, -32000, `${STATUS_CODES[status] ?? 'Bad Request'}: the body could not be read`);
}
