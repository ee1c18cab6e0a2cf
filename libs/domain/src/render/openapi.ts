import { HUB_FULL_RETRY_AFTER_SECONDS, MAX_HEADER_BYTES, MAX_HUB_BODY_BYTES, MAX_MCP_BATCH_MESSAGES, MAX_MCP_BODY_BYTES, MAX_REQUEST_TARGET_LENGTH } from '../limits.js';
import { ErrorEnvelope, HealthStatus, InsightsDocument, ReadinessStatus, ReviewsDocument, SearchResult, SinceResult } from '../schemas/documents.js';
import { SearchParams, SinceParams } from '../schemas/search.js';
import { PATHS, topicLinkHeader, type PublicUrls, type TopicName } from '../urls.js';
import { FEED_SIZE, JsonFeed } from './json-feed.js';
import { componentRef, componentSchemas, parametersFrom, type JsonSchema, type ParameterObject } from './openapi-schemas.js';
import { JsonRpcRequest, JsonRpcResponse, McpRequestBody, McpResponseBody, webSubHubRequest } from './wire-schemas.js';

/** An `Mcp-Session-Id` as the gateway mints it: visible ASCII (MCP 2025-06-18 basic/transports). */
const SESSION_ID_SCHEMA = { type: 'string', pattern: '^[\\x21-\\x7E]+$' };

export const OPENAPI_VERSION = '3.1.0';
export const API_VERSION = '1.0.0';
const MCP_PROTOCOL_VERSION = '2025-06-18';
/** What `Allow` lists on /mcp and on the hub (their 405 and OPTIONS answers). */
const MCP_METHODS = 'POST, OPTIONS';
const HUB_METHODS = 'POST, OPTIONS';

type Json = Record<string, unknown>;

/** A limit in bytes as the descriptions write it. */
const kib = (bytes: number): string => `${bytes / 1024} KiB`;
type Reference = { readonly $ref: string };

const RESPONSE_REF = '#/components/responses/';

const ref = {
  schema: (id: string): Reference => ({ $ref: componentRef(id) }),
  header: (name: string): Reference => ({ $ref: `#/components/headers/${name}` }),
  parameter: (name: string): Reference => ({ $ref: `#/components/parameters/${name}` }),
  response: (name: string): Reference => ({ $ref: `${RESPONSE_REF}${name}` }),
};

const HEAD_NOTE = 'HEAD answers with the same status and headers as GET, without a body.';
/** The hub's plain-text answers, with the exact Content-Type it sends. */
const TEXT_PLAIN = (example: string): Json => ({ 'text/plain; charset=utf-8': { schema: { type: 'string' }, example } });
const RETRY_AFTER = { description: 'Seconds to wait before retrying.', required: true, schema: { type: 'integer', minimum: 0 } };
const JSON_ERROR = { 'application/json': { schema: ref.schema('Error') } };

/** Every answer that is not a cacheable representation: errors, probes, MCP and the hub. */
const NO_STORE = { 'Cache-Control': { description: 'Always `no-store`: this answer is not for a cache.', required: true, schema: { type: 'string', const: 'no-store' } } };

const INFO_DESCRIPTION = [
  "Read-only publication of one funeral home's verified customer reviews and aspect-based sentiment insights, over plain HTTP (JSON), feeds, MCP and WebSub. A dataset's unverified reviews are not published: no document, feed, search, tool or insight shows or counts them.",
  '',
  '- **No authentication.** Every endpoint is public and read-only; an `Authorization` header is ignored.',
  `- **HEAD.** ${HEAD_NOTE}`,
  "- **Conditional requests.** Every GET representation carries a strong `ETag` derived from its bytes (one per content-coding; a since result's from `/reviews.json`'s and its date, as it is cut from that document's bytes, so it changes whenever that document does) and `Last-Modified` (the publish time of the dataset version in which that representation's bytes last changed; for search and since results, in which `/reviews.json` or `/insights.json`, which they are computed from, last changed: it may move while a result's bytes stay the same, and its `ETag` then still matches; never before the replica started, since a new release may render the same dataset differently; replicas may therefore date what they loaded at start differently). A matching `If-None-Match` (weak comparison, lists and `*` accepted) gives `304` with an empty body, carrying `ETag`, `Vary` and `Cache-Control` but no `Last-Modified` (RFC 9110 §15.4.5); `If-Modified-Since` is honoured only when no `If-None-Match` is sent (a date in a second two dataset versions share gets `200`: it cannot tell them apart); an `If-Match` (strong comparison) or `If-Unmodified-Since` that does not hold gives `412`, evaluated first (RFC 9110 §13.2.2).",
  "- **Byte ranges.** Every GET representation carries `Accept-Ranges: bytes`. A `Range` of one range (`bytes=first-last`, `bytes=first-` or `bytes=-suffix`), counted in the bytes of the content-coding the request negotiated, gets `206` with `Content-Range` and the 200's validators; one that starts past the end gets `416` with `Content-Range: bytes */length`. Ranges that overlap or touch are joined into one; ranges with a gap between them, another unit or an invalid range are ignored (`200` with the whole representation, which RFC 9110 §14.2 allows), and so is `Range` on HEAD. `If-Range` resumes only while the strong `ETag` it names is current; a date there never matches, since `Last-Modified` is not a strong validator here (see above), so the whole representation is sent. Preconditions come first (`412`, `304`).",
  '- **Errors.** One JSON envelope everywhere on the REST side: `{ "error": "<code>", "message": "...", "issues": [...] }`, with `issues` on validation errors naming the offending parameter in `path`. Unknown paths get `404`, a wrong method `405` with `Allow`; bad input never gets a 5xx or an HTML page.',
  '- **Before routing.** Any request may get `400` (a malformed request target, `Host` or `Transfer-Encoding`; after a malformed `Transfer-Encoding`, which leaves where the request ends unknown, the connection then closes), `408` (its headers took over 10 s to arrive, or the whole request over 30 s; the connection then closes), `414`, `417` (an `Expect` other than `100-continue`), `431`, `501` (an unknown method, `CONNECT`, or a transfer coding other than `chunked`) or `505` (an HTTP version other than 1.0 and 1.1), always with the JSON envelope but for a `408` to a request whose headers had not all arrived, which has no content (its method is not known, and an answer to HEAD has none); the operations below list those a client can meet.',
  '- **WebSub topics.** `/feed.xml`, `/api/feed.json` and `/reviews.json` advertise the hub in a `Link` header (`rel="hub"` and `rel="self"`); the hub pushes their full content on every change.',
  '- **CORS.** GET responses allow any origin and expose `ETag`, `Last-Modified`, `Link`, `Mcp-Session-Id`, `Retry-After`, `Allow`, `Accept-Ranges` and `Content-Range`.',
].join('\n');

/** Responses shared by many operations; `headOperation` reads them to drop their bodies. */
const RESPONSES: Record<string, Json> = {
  NotModified: {
    description: 'Not Modified: the validator matches; empty body.',
    headers: { ETag: ref.header('ETag'), 'Cache-Control': ref.header('Cache-Control'), Vary: ref.header('Vary') },
  },
  BadRequest: {
    headers: NO_STORE,
    description: 'Invalid parameters: the envelope lists every problem in `issues`, each naming the offending parameter in `path`. A query whose percent-encoding is malformed or not UTF-8 is refused before its parameters are read (`bad_request`): `issues` then names every parameter whose escapes are bad, and the rest are checked once those are fixed.',
    content: {
      'application/json': {
        schema: ref.schema('Error'),
        examples: {
          invalidQuery: {
            value: { error: 'invalid_query', message: 'Invalid search parameters.', issues: [{ code: 'too_big', path: ['limit'], message: 'Too big: expected number to be <=100' }] },
          },
          invalidDate: {
            value: { error: 'invalid_date', message: 'The date must be a real calendar date in the form YYYY-MM-DD.', issues: [{ code: 'custom', path: ['date'], message: 'must be a real calendar date in the form YYYY-MM-DD' }] },
          },
        },
      },
    },
  },
  NotFound: { description: 'Unknown path: a JSON error envelope, never an HTML page.', headers: NO_STORE, content: JSON_ERROR },
  NotReady: {
    description: 'Service Unavailable: no dataset has been loaded yet (the service is starting or waiting for its first publish).',
    headers: { 'Retry-After': RETRY_AFTER, ...NO_STORE },
    content: JSON_ERROR,
  },
  RangeNotSatisfiable: {
    description: 'Range Not Satisfiable: no range in `Range` selects a byte of the representation (of its negotiated content-coding): each starts past the end or is a suffix of 0 bytes.',
    headers: { 'Content-Range': { ...ref.header('Content-Range'), description: '`bytes */length`: the length of the representation the request negotiated.' }, Vary: ref.header('Vary'), ...NO_STORE },
    content: JSON_ERROR,
  },
  PreconditionFailed: { description: 'Precondition Failed: `If-Match` or `If-Unmodified-Since` does not hold for the current representation.', headers: NO_STORE, content: JSON_ERROR },
  BadRequestTarget: {
    headers: NO_STORE,
    description:
      'Bad Request before any routing: a request target that is neither a path nor an absolute http(s) URI with a plain `host[:port]`, holds a fragment, a character every client percent-encodes (controls, space, `"`, `<`, `>`; in the path also `\\`, `^`, `` ` ``, `{`, `}`) or a `%` without two hex digits, has a query whose escapes do not decode to UTF-8 (`issues` names the parameter), or a missing, repeated or invalid `Host` (RFC 9112 §3.2).',
    content: JSON_ERROR,
  },
  RequestTimeout: {
    description:
      "Request Timeout: the request's headers did not all arrive within 10 s of its first byte, or the whole request within 30 s; the connection then closes. No content when its headers had not all arrived: its method is not known, and a HEAD's answer has none (RFC 9110 §9.3.2).",
    headers: NO_STORE,
    content: JSON_ERROR,
  },
  UriTooLong: { description: `URI Too Long: the request target exceeds ${kib(MAX_REQUEST_TARGET_LENGTH)}.`, headers: NO_STORE, content: JSON_ERROR },
  ExpectationFailed: { description: 'Expectation Failed: an `Expect` other than `100-continue`.', headers: NO_STORE, content: JSON_ERROR },
  HeadersTooLarge: { description: `Request Header Fields Too Large: the header block exceeds ${kib(MAX_HEADER_BYTES)}.`, headers: NO_STORE, content: JSON_ERROR },
  TransferCodingNotImplemented: { description: 'Not Implemented: a `Transfer-Encoding` other than `chunked` (RFC 9112 §6.1).', headers: NO_STORE, content: JSON_ERROR },
  HttpVersionNotSupported: { description: 'HTTP Version Not Supported: a request line with an HTTP version other than 1.0 and 1.1, such as the `PRI * HTTP/2.0` preface of an HTTP/2 client with prior knowledge (h2c, RFC 9113 §3.3): HTTP/2 is not served over a plain connection.', headers: NO_STORE, content: JSON_ERROR },
  Preflight: {
    description: 'No Content: a CORS preflight or `OPTIONS` request; `Allow` and `Access-Control-Allow-Methods` list the methods the path supports.',
    headers: {
      Allow: ref.header('Allow'),
      'Access-Control-Allow-Methods': { description: 'Same list as `Allow`.', required: true, schema: { type: 'string' } },
      'Access-Control-Allow-Headers': { description: 'The request headers a browser may send: those it asked for in `Access-Control-Request-Headers`.', required: false, schema: { type: 'string' } },
      'Access-Control-Max-Age': { description: 'How long a browser may keep this preflight, in seconds.', required: true, schema: { type: 'string', examples: ['86400'] } },
    },
  },
};

function components(urls: PublicUrls): Json {
  return {
    schemas: componentSchemas({
      ReviewsDocument,
      InsightsDocument,
      SearchResult,
      SinceResult,
      Error: ErrorEnvelope,
      Health: HealthStatus,
      Readiness: ReadinessStatus,
      JsonFeed,
      JsonRpcRequest,
      JsonRpcResponse,
      McpRequestBody,
      McpResponseBody,
      WebSubSubscriptionRequest: webSubHubRequest(urls),
    }),
    headers: {
      ETag: { description: 'Strong validator derived from the representation bytes; each content-coding (identity, gzip, br) has its own.', required: true, schema: { type: 'string' }, example: '"hS3tq0yQe3VDMgHx6xkQ7nQ4Y1hQ2m8P"' },
      'Last-Modified': { description: "Publish time of the dataset version in which this representation's bytes last changed (HTTP-date; for search and since results, in which `/reviews.json` or `/insights.json` last changed, which may be later), never before the replica started (a new release may render the same dataset differently), never later than `Date`, and later than the version it replaced (a version stamped earlier, or in the same second, is dated when it replaced it).", required: true, schema: { type: 'string' }, example: 'Tue, 01 Jul 2025 12:00:00 GMT' },
      'Cache-Control': { description: 'Public caching policy; caches revalidate with the validators above.', required: true, schema: { type: 'string' }, example: 'public, max-age=60, must-revalidate' },
      Vary: { description: 'Always `Accept-Encoding`: brotli and gzip variants are served when accepted.', required: true, schema: { type: 'string', const: 'Accept-Encoding' } },
      Allow: { description: 'The methods the path supports.', required: true, schema: { type: 'string' } },
      'Accept-Ranges': { description: 'Always `bytes`: a GET may ask for one byte range with `Range`.', required: true, schema: { type: 'string', const: 'bytes' } },
      'Content-Range': {
        description: "The bytes a 206 holds, `bytes first-last/length`, or on 416 `bytes */length`; positions and length count the bytes of the content-coding the request negotiated.",
        required: true,
        schema: { type: 'string', pattern: '^bytes (\\d+-\\d+|\\*)/\\d+$' },
        example: 'bytes 0-1023/37423',
      },
      'Mcp-Session-Id': {
        description: 'Session id minted by `initialize`; any replica accepts it and it survives restarts. Visible ASCII only.',
        required: true,
        schema: SESSION_ID_SCHEMA,
      },
    },
    parameters: {
      IfNoneMatch: {
        name: 'If-None-Match',
        in: 'header',
        required: false,
        description: 'ETag(s) from an earlier response; weak comparison, comma-separated lists and `*` are accepted. A match gives 304.',
        schema: { type: 'string' },
      },
      IfModifiedSince: {
        name: 'If-Modified-Since',
        in: 'header',
        required: false,
        description: 'HTTP-date; 304 when the dataset has not been published since. Ignored when `If-None-Match` is present (RFC 9110 precedence).',
        schema: { type: 'string' },
      },
      IfMatch: {
        name: 'If-Match',
        in: 'header',
        required: false,
        description: 'ETag(s) the representation must still have (strong comparison; `*` matches any). Otherwise 412.',
        schema: { type: 'string' },
      },
      IfUnmodifiedSince: {
        name: 'If-Unmodified-Since',
        in: 'header',
        required: false,
        description: 'HTTP-date; 412 when the dataset was published after it. Ignored when `If-Match` is present.',
        schema: { type: 'string' },
      },
      Range: {
        name: 'Range',
        in: 'header',
        required: false,
        description:
          'One byte range of the representation, counted in the bytes of the negotiated content-coding: `bytes=first-last`, `bytes=first-` or `bytes=-suffix`. 206 with those bytes; 416 when it starts past the end. Ranges that overlap or touch are joined; ranges with a gap between them, another unit or an invalid range are ignored (200 with the whole representation). GET only.',
        schema: { type: 'string' },
      },
      IfRange: {
        name: 'If-Range',
        in: 'header',
        required: false,
        description: 'The strong ETag of the copy being resumed: `Range` is served only while that ETag is current, else 200 with the whole representation. A date never matches: `Last-Modified` is not a strong validator here.',
        schema: { type: 'string' },
      },
    },
    responses: RESPONSES,
  };
}

interface ReadEndpoint {
  readonly operationId: string;
  readonly tag: string;
  readonly summary: string;
  readonly description: string;
  readonly queryParameters?: readonly ParameterObject[];
  /** Declared on the Path Item, so every operation of the path resolves its template. */
  readonly pathParameters?: readonly ParameterObject[];
  readonly content: Json;
  /** Set on WebSub topics, whose responses advertise the hub. */
  readonly topic?: TopicName;
  /** Set on search, whose pages link the next one. */
  readonly paged?: true;
}

/** The `Link` a page with a next one carries. */
function pageHeaders(endpoint: ReadEndpoint): Json {
  if (endpoint.paged === undefined) return {};
  return {
    Link: {
      description: 'On a page that has a next one: `<…?…&cursor=…>; rel="next"` (RFC 8288), the same search for the next page, the `next_cursor` of the body as its cursor. Absent on the last page.',
      required: false,
      schema: { type: 'string' },
    },
  };
}

/** Every GET shares the conditional-request, HEAD and error behaviour; only the body and parameters differ. */
function readOperation(urls: PublicUrls, endpoint: ReadEndpoint): Json {
  const parameters = endpoint.queryParameters ?? [];
  const takesParameters = parameters.length > 0 || (endpoint.pathParameters ?? []).length > 0;
  // A topic's Link advertises the hub; a search page's, the next page.
  const linkHeaders: Json =
    endpoint.topic === undefined
      ? pageHeaders(endpoint)
      : {
          Link: {
            description: 'Advertises the WebSub hub and this topic, identical on GET and in notifications.',
            required: true,
            schema: { type: 'string' },
            example: topicLinkHeader(urls, endpoint.topic),
          },
        };
  const representationHeaders = {
    ETag: ref.header('ETag'),
    'Last-Modified': ref.header('Last-Modified'),
    'Cache-Control': ref.header('Cache-Control'),
    Vary: ref.header('Vary'),
    'Accept-Ranges': ref.header('Accept-Ranges'),
    'Content-Encoding': { description: '`gzip` or `br` when `Accept-Encoding` chose one of them; absent for the identity variant.', required: false, schema: { type: 'string', enum: ['gzip', 'br'] } },
    ...linkHeaders,
  };
  return {
    tags: [endpoint.tag],
    operationId: endpoint.operationId,
    summary: endpoint.summary,
    description: `${endpoint.description}\n\n${HEAD_NOTE}`,
    parameters: [...parameters, ref.parameter('IfNoneMatch'), ref.parameter('IfModifiedSince'), ref.parameter('IfMatch'), ref.parameter('IfUnmodifiedSince'), ...GET_ONLY_PARAMETERS],
    responses: {
      '200': { description: 'OK', headers: representationHeaders, content: endpoint.content },
      '206': {
        description: 'Partial Content: the one range of bytes `Range` asks for, of the variant the request negotiated (`Content-Encoding` as on the 200), with the 200\'s validators.',
        headers: { ...representationHeaders, 'Content-Range': ref.header('Content-Range') },
        content: Object.fromEntries(Object.keys(endpoint.content).map((mediaType) => [mediaType, { schema: { description: 'Bytes first to last of the representation, as `Content-Range` says: a slice, not a document by itself.' } }])),
      },
      '304':
        Object.keys(linkHeaders).length === 0
          ? ref.response('NotModified')
          : { description: String(RESPONSES.NotModified!.description), headers: { ...(RESPONSES.NotModified!.headers as Json), ...linkHeaders } },
      '400': takesParameters ? { ...ref.response('BadRequest'), description: 'Invalid parameters, or a malformed request target or Host.' } : ref.response('BadRequestTarget'),
      '412': ref.response('PreconditionFailed'),
      '416': ref.response('RangeNotSatisfiable'),
      ...TARGET_ERRORS,
      '503': ref.response('NotReady'),
    },
  };
}

/** Byte ranges are defined for GET only (RFC 9110 §14.2): a HEAD ignores them, so its operation has neither. */
const GET_ONLY_PARAMETERS = [ref.parameter('Range'), ref.parameter('IfRange')];
const GET_ONLY_STATUSES = new Set(['206', '416']);

/** What the HTTP server answers on any path before routing (libs/runtime http/server.ts), besides a 400 for a malformed target. */
const TARGET_ERRORS: Json = {
  '408': ref.response('RequestTimeout'),
  '414': ref.response('UriTooLong'),
  '417': ref.response('ExpectationFailed'),
  '431': ref.response('HeadersTooLarge'),
  '501': ref.response('TransferCodingNotImplemented'),
  '505': ref.response('HttpVersionNotSupported'),
};

/** The methods of every read path and probe: what `Allow` lists there. */
const READ_METHODS = 'GET, HEAD, OPTIONS';

/** OPTIONS on a path: the CORS preflight. */
function preflightOperation(operationId: string, tag: string, methods = READ_METHODS): Json {
  return {
    tags: [tag],
    operationId,
    summary: 'CORS preflight',
    description: `Answers 204 with the allowed methods (\`${methods}\`); other methods on this path get 405 with \`Allow\`.`,
    responses: { '204': ref.response('Preflight'), '400': ref.response('BadRequestTarget'), ...TARGET_ERRORS },
  };
}

function readPaths(urls: PublicUrls): Record<string, Json> {
  const json = (schemaId: string): Json => ({ 'application/json': { schema: ref.schema(schemaId) } });
  const get = (endpoint: ReadEndpoint): Json => ({
    ...(endpoint.pathParameters === undefined ? {} : { parameters: endpoint.pathParameters }),
    get: readOperation(urls, endpoint),
    options: preflightOperation(`${endpoint.operationId}Preflight`, endpoint.tag),
  });
  return {
    [PATHS.reviews]: get({
      operationId: 'getReviews',
      tag: 'datasets',
      summary: 'The reviews dataset',
      description: 'Business metadata, the aggregate rating and the full set of verified reviews of the published dataset, newest first (date, then id, descending); the aggregate counts exactly those. A WebSub topic.',
      content: json('ReviewsDocument'),
      topic: 'reviews',
    }),
    [PATHS.insights]: get({
      operationId: 'getInsights',
      tag: 'datasets',
      summary: 'The insights dataset',
      description: 'Aspect-based sentiment, entities (staff, services, problems, service areas), topics, monthly trend, per-review analysis, FAQ and summary. Aggregates are derived from the reviews, so they never disagree with `/reviews.json`.',
      content: json('InsightsDocument'),
    }),
    [PATHS.feedJson]: get({
      operationId: 'getJsonFeed',
      tag: 'feeds',
      summary: `JSON Feed 1.1 of the ${FEED_SIZE} newest reviews`,
      description: `JSON Feed 1.1 holding the ${FEED_SIZE} newest reviews, newest first, with \`hubs\` naming the WebSub hub. Served as \`application/json\`, byte-identical to the WebSub notification body. A WebSub topic.`,
      content: json('JsonFeed'),
      topic: 'feedJson',
    }),
    [PATHS.feedAtom]: get({
      operationId: 'getAtomFeed',
      tag: 'feeds',
      summary: `Atom feed of the ${FEED_SIZE} newest reviews`,
      description: `Atom 1.0 (RFC 4287) feed of the ${FEED_SIZE} newest reviews, newest first, with \`<link rel="self">\` and \`<link rel="hub">\`. Ids are \`urn:uuid:\` name-based UUIDs of the business's id and each review's id, so they stay the same wherever the service is deployed and wherever the business's website moves (RFC 4287 §4.2.6); each entry's content is plain text and its \`alternate\` link the review's source URL, else \`${urls.reviews}#<review id>\`. A WebSub topic.`,
      content: { 'application/atom+xml': { schema: { type: 'string', description: 'An Atom 1.0 feed document (RFC 4287).' } } },
      topic: 'feedAtom',
    }),
    [PATHS.search]: get({
      operationId: 'searchReviews',
      tag: 'reviews',
      summary: 'Search reviews',
      description: [
        'The HTTP twin of the MCP tool `search_reviews`; both take the same parameters.',
        String(SearchParams.meta()?.description ?? ''),
        'Text matching (`query`, `mentions_technician`, `mentions_service`) ignores letter case, and canonically equivalent spellings match (both sides are compared in Unicode NFC: `cafe` followed by U+0301 finds `café`). `since` and `until` are inclusive and must be real calendar dates; `since` after `until` is a 400. Unknown or repeated parameters are a 400; an empty result is still a 200.',
      ].join(' '),
      queryParameters: parametersFrom(SearchParams, 'query'),
      content: json('SearchResult'),
      paged: true,
    }),
    [`${PATHS.sincePrefix}{date}`]: get({
      operationId: 'getReviewsSince',
      tag: 'reviews',
      summary: 'Reviews on or after a date',
      description: 'Every review dated on or after `date`, newest first (date, then id, descending). A malformed or impossible date (e.g. 2025-02-30) is a 400, and so is any query parameter (this endpoint takes none); no match is a 200 with an empty list.',
      pathParameters: parametersFrom(SinceParams, 'path'),
      content: json('SinceResult'),
    }),
    [PATHS.openapi]: get({
      operationId: 'getOpenApiDocument',
      tag: 'meta',
      summary: 'This OpenAPI document',
      description: `The OpenAPI ${OPENAPI_VERSION} description of this service, generated from the schemas the service validates with.`,
      content: { 'application/json': { schema: { type: 'object', description: `OpenAPI ${OPENAPI_VERSION} document.` } } },
    }),
  };
}

/** Liveness and readiness, on every service's public port (libs/runtime probes.ts). */
function probePaths(): Record<string, Json> {
  const probe = (operationId: string, summary: string, description: string, responses: Json): Json => ({
    get: {
      tags: ['operations'],
      operationId,
      summary,
      description: `${description} Never cached. ${HEAD_NOTE} Preconditions apply to its 200 though it has no validators: a listed \`If-Match\` tag gives 412, \`If-None-Match: *\` gives 304.`,
      parameters: [ref.parameter('IfNoneMatch'), ref.parameter('IfMatch')],
      responses: {
        ...responses,
        '304': { description: 'Not Modified: `If-None-Match: *` matches the current answer; empty body.', headers: NO_STORE },
        '400': ref.response('BadRequestTarget'),
        '412': ref.response('PreconditionFailed'),
        ...TARGET_ERRORS,
      },
    },
    options: preflightOperation(`${operationId}Preflight`, 'operations'),
  });
  const readiness = (description: string): Json => ({ description, headers: NO_STORE, content: { 'application/json': { schema: ref.schema('Readiness') } } });
  return {
    [PATHS.health]: probe('getHealth', 'Liveness', 'The process is alive and answers requests.', { '200': { description: 'Alive.', headers: NO_STORE, content: { 'application/json': { schema: ref.schema('Health') } } } }),
    [PATHS.ready]: probe('getReadiness', 'Readiness', 'Ready when a dataset is loaded and the process is not shutting down. A NATS outage does not fail it: the last dataset keeps being served, and `source` says so.', {
      '200': readiness('Ready: a dataset is served.'),
      '503': readiness('Not ready: no dataset loaded yet (`not_ready`) or shutting down (`shutting_down`).'),
    }),
  };
}

/** What every `/mcp` answer carries. */
const MCP_ANSWER_HEADERS = {
  Vary: { description: 'Every `/mcp` answer varies by `Origin` and `Accept-Encoding`, and none is for a cache.', required: true, schema: { type: 'string', const: 'Origin, Accept-Encoding' } },
  ...NO_STORE,
};

function jsonRpcError(description: string, code: number, message: string, headers: Json = {}): Json {
  return { description, headers: { ...MCP_ANSWER_HEADERS, ...headers }, content: { 'application/json': { schema: ref.schema('JsonRpcResponse'), example: { jsonrpc: '2.0', id: null, error: { code, message } } } } };
}

const MCP_FORBIDDEN = jsonRpcError('Forbidden: an `Origin` header is present and not allowed (DNS-rebinding protection).', -32000, 'Forbidden: origin not allowed');

/**
 * A 400 that may also come before routing (a malformed request target or `Host`), as the JSON error
 * envelope, with the headers every refusal before routing has: a `Vary` of the endpoint's own is not among them.
 */
function orRefusedTarget(response: Json): Json {
  const content = response.content as Record<string, Json>;
  const json = content['application/json'];
  const headers = response.headers as Record<string, Json>;
  const vary = headers['Vary'];
  return {
    ...response,
    headers: vary === undefined ? headers : { ...headers, Vary: { ...vary, required: false, description: `${String(vary.description)} Absent on a refusal before routing.` } },
    description: `${String(response.description)} A malformed request target or \`Host\` is refused before routing, with the JSON error envelope.`,
    content: { ...content, 'application/json': { ...json, schema: json === undefined ? ref.schema('Error') : { oneOf: [json.schema, ref.schema('Error')] } } },
  };
}

function mcpPath(): Json {
  const notAllowed = (operationId: string, summary: string): Json => ({
    tags: ['mcp'],
    operationId,
    summary,
    description: 'The server offers no server-initiated event stream and no explicit session termination: sessions need no server state.',
    responses: {
      '405': jsonRpcError('Method Not Allowed: the endpoint accepts POST only.', -32000, 'Method Not Allowed: this MCP endpoint accepts POST only', {
        Allow: { ...ref.header('Allow'), description: `\`${MCP_METHODS}\`` },
      }),
      '403': MCP_FORBIDDEN,
      '400': ref.response('BadRequestTarget'),
      ...TARGET_ERRORS,
    },
  });
  return {
    post: {
      tags: ['mcp'],
      operationId: 'mcp',
      summary: 'MCP server (streamable HTTP, JSON-RPC 2.0)',
      description: [
        `Model Context Protocol ${MCP_PROTOCOL_VERSION} over streamable HTTP. Read-only tools over the review dataset, among them \`get_business\` and \`search_reviews\` (same parameters as GET /api/reviews/search); tools declare an \`outputSchema\` and return \`structuredContent\` plus the same JSON as text.`,
        '',
        '`initialize` starts a session and returns its id in the `Mcp-Session-Id` response header; send it, with `MCP-Protocol-Version`, on every later request.',
        'Requests must send `Content-Type: application/json` and `Accept: application/json, text/event-stream` (the transport requires both); responses are always plain JSON, never an event stream. One message per POST under 2025-06-18, which removed JSON-RPC batches; in a session that negotiated 2025-03-26 or earlier a batch of up to ' + MAX_MCP_BATCH_MESSAGES + ' messages, without `initialize`, is answered with an array of the responses to its requests, where each element that is no JSON-RPC message gets its own -32600 Invalid Request error, carrying its own `id` when it is a request whose id can be read and `id: null` otherwise (JSON-RPC 2.0 §5, §6). At most ' + kib(MAX_MCP_BODY_BYTES) + ' (after decoding a `Content-Encoding` of gzip, deflate, br or zstd). No key or token is needed.',
      ].join('\n'),
      parameters: [
        {
          name: 'Mcp-Session-Id',
          in: 'header',
          required: false,
          description: 'Required on every request after `initialize`: missing → 400; unknown or forged → 404 (initialize again).',
          schema: { type: 'string', pattern: '^[\\x21-\\x7E]+$' },
        },
        {
          name: 'MCP-Protocol-Version',
          in: 'header',
          required: false,
          description: `The negotiated protocol version, sent on every request after \`initialize\`; absent → the version the session negotiated; an unsupported value, or another version than the negotiated one → 400, whatever the body.`,
          schema: { type: 'string', examples: [MCP_PROTOCOL_VERSION] },
        },
      ],
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: ref.schema('McpRequestBody'),
            examples: {
              initialize: {
                value: { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: MCP_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'example-client', version: '1.0.0' } } },
              },
              listTools: { value: { jsonrpc: '2.0', id: 2, method: 'tools/list' } },
              searchReviews: { value: { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'search_reviews', arguments: { rating: 5, limit: 3 } } } },
            },
          },
        },
      },
      responses: {
        '200': {
          description: 'The JSON-RPC response (for a batch, an array of the responses to its requests and of a -32600 error for each element that is no JSON-RPC message, with its own `id` when it is a request whose id can be read and `id: null` otherwise, in order); a tool failure is a result with `isError: true`, a protocol failure a JSON-RPC error.',
          headers: {
            'Mcp-Session-Id': { ...ref.header('Mcp-Session-Id'), description: 'The session id: minted on `initialize`, echoed afterwards.' },
            'Content-Encoding': {
              description: '`gzip` on the answers of 1 KiB or more that the gateway keeps per dataset version (a repeated `tools/call`, the lists, `resources/read`) once they are compressed, when the request accepts gzip; absent on the others.',
              required: false,
              schema: { type: 'string', const: 'gzip' },
            },
            ...MCP_ANSWER_HEADERS,
          },
          content: { 'application/json': { schema: ref.schema('McpResponseBody') } },
        },
        '202': {
          description: 'Accepted: the message was a notification or a response, or a batch of only those; no body.',
          // Written out, not a $ref: OAS 3.1 ignores a reference's siblings but for summary and description.
          headers: { 'Mcp-Session-Id': { description: 'The session id, echoed.', required: false, schema: SESSION_ID_SCHEMA }, ...MCP_ANSWER_HEADERS },
        },
        '400': orRefusedTarget(
          jsonRpcError(
            'Bad Request: missing `Mcp-Session-Id` after initialize, unsupported `MCP-Protocol-Version`, a body that does not decode as its `Content-Encoding` says (-32000), unparseable JSON (-32700), a non-JSON-RPC body, `initialize` without an id, a batch under 2025-06-18 or later whatever it holds, or a batch that is empty, over ' + MAX_MCP_BATCH_MESSAGES + ' messages, holding `initialize` or mixing requests and responses (-32600). Batch elements that are no JSON-RPC message are answered inside the 200 array.',
            -32000,
            'Bad Request: Mcp-Session-Id header is required; send initialize first',
          ),
        ),
        '403': MCP_FORBIDDEN,
        '404': jsonRpcError('Unknown, expired or forged session id: initialize again without one.', -32001, 'Session not found'),
        '413': jsonRpcError(`Payload Too Large: the body exceeds ${kib(MAX_MCP_BODY_BYTES)}.`, -32600, 'Payload Too Large'),
        '429': jsonRpcError(
          'Too Many Requests: this client address (an IPv6 /64) sent more POSTs this minute than the replica allows (`MCP_RATE_LIMIT_PER_MINUTE`, default 600, a fifth of them at once), whatever they asked.',
          -32000,
          'Too Many Requests: more than 600 MCP requests a minute from this client; retry after 1 s',
          { 'Retry-After': RETRY_AFTER },
        ),
        '406': jsonRpcError('Not Acceptable: `Accept` must list both `application/json` and `text/event-stream`.', -32000, 'Not Acceptable: Client must accept both application/json and text/event-stream'),
        '415': jsonRpcError('Unsupported Media Type: the body must be `application/json` in UTF-8, with no `Content-Encoding` or one of gzip, deflate, br and zstd.', -32000, 'Unsupported Media Type: Content-Type must be application/json', {
          'Accept-Encoding': { description: 'On a body refused for its `Content-Encoding` (RFC 9110 §15.5.16): the content-codings a body may come in, `gzip, deflate, br, zstd, identity`.', required: false, schema: { type: 'string' } },
        }),
        ...TARGET_ERRORS,
      },
    },
    get: notAllowed('mcpGetNotAllowed', 'No server-initiated stream'),
    options: {
      tags: ['mcp'],
      operationId: 'mcpPreflight',
      summary: 'CORS preflight',
      description: "A browser's preflight before POST or DELETE. An `Origin` that is not allowed gets 403, as on POST.",
      responses: {
        '204': {
          description: 'No Content: POST may be sent with the MCP request headers.',
          headers: {
            Allow: { ...ref.header('Allow'), description: `\`${MCP_METHODS}\`` },
            'Access-Control-Allow-Methods': { description: '`POST, DELETE`: DELETE so that a browser ending its session can read its `405`.', required: true, schema: { type: 'string' } },
            'Access-Control-Allow-Headers': { description: 'The request headers MCP uses, among them `Content-Type`, `Content-Encoding` (a compressed body), `Accept`, `Mcp-Session-Id` and `MCP-Protocol-Version`.', schema: { type: 'string' } },
          },
        },
        '403': MCP_FORBIDDEN,
        '400': ref.response('BadRequestTarget'),
        ...TARGET_ERRORS,
      },
    },
    delete: notAllowed('mcpDeleteNotAllowed', 'No explicit session termination'),
  };
}

function hubPath(urls: PublicUrls): Json {
  const callbackUrl = '{$request.body#/hub.callback}';
  const query = (name: string, description: string, schema: JsonSchema, required = true): Json => ({ name, in: 'query', required, description, schema });
  return {
    post: {
      tags: ['websub'],
      operationId: 'webSubHub',
      summary: 'Subscribe to or unsubscribe from a topic',
      description: [
        `The WebSub hub. Topics: \`${urls.feedAtom}\`, \`${urls.feedJson}\` and \`${urls.reviews}\`.`,
        'A valid request is answered 202 at once; the hub then verifies intent by a GET to the callback and changes the subscription only once verified (so a failed re-subscribe leaves the old one active).',
        'An invalid request is answered 4xx with a plain-text reason naming the field and never reaches the callback; a field given twice is invalid, unknown fields are ignored, `hub.lease_seconds` and `hub.secret` count only on subscribe.',
      ].join(' '),
      requestBody: { required: true, content: { 'application/x-www-form-urlencoded': { schema: ref.schema('WebSubSubscriptionRequest') } } },
      responses: {
        '202': { headers: NO_STORE, description: 'Accepted: verification of intent runs asynchronously.', content: TEXT_PLAIN('Accepted: the hub will verify this subscribe request with a GET to the callback.') },
        '400': orRefusedTarget({ headers: NO_STORE, description: 'Bad Request: a field is missing, repeated or invalid (non-HTTPS, private or `localhost` callback, unknown topic or mode, a topic or callback too long, secret too long), as plain text.', content: TEXT_PLAIN('hub.callback: must be an https: URL') }),
        '413': { headers: NO_STORE, description: `Payload Too Large: the form exceeds ${kib(MAX_HUB_BODY_BYTES)}.`, content: TEXT_PLAIN(`The body must be at most ${MAX_HUB_BODY_BYTES} bytes.`) },
        '415': {
          headers: { ...NO_STORE, 'Accept-Encoding': { description: '`identity` when the form came content-coded: send it uncompressed.', required: false, schema: { type: 'string', const: 'identity' } } },
          description: 'Unsupported Media Type: the body must be application/x-www-form-urlencoded (UTF-8).', content: TEXT_PLAIN('The body must be application/x-www-form-urlencoded (UTF-8).') },
        '429': { description: 'Too Many Requests from this client or for this callback host.', headers: { 'Retry-After': RETRY_AFTER, ...NO_STORE }, content: TEXT_PLAIN('Too many hub requests from this client; retry later.') },
        '503': {
          description:
            `The hub cannot take the request now: too many verifications in progress, its subscription store (NATS) out of reach, or (a subscribe only) it holds its maximum number of subscriptions, which frees up only as leases end or subscribers unsubscribe (\`Retry-After\` is then ${HUB_FULL_RETRY_AFTER_SECONDS} s). Nothing was accepted; retry after the given seconds.`,
          headers: { 'Retry-After': RETRY_AFTER, ...NO_STORE },
          content: TEXT_PLAIN('The hub has too many verifications in progress; retry later.'),
        },
        ...TARGET_ERRORS,
      },
      callbacks: {
        verification: {
          [callbackUrl]: {
            get: {
              summary: 'Verification of intent, or denial',
              description:
                'Sent after a (un)subscription request: answer 2xx with exactly `hub.challenge` as a text/plain body, anything else rejects the request. `hub.mode=denied` (with `hub.reason`, no challenge) tells a subscriber the hub removed its subscription after 3 consecutive failed deliveries.',
              parameters: [
                query('hub.mode', 'What is being verified, or `denied`.', { type: 'string', enum: ['subscribe', 'unsubscribe', 'denied'] }),
                query('hub.topic', 'The topic URL.', { type: 'string', format: 'uri' }),
                query('hub.challenge', 'Random string to echo (not sent with `denied`).', { type: 'string' }, false),
                query('hub.lease_seconds', 'On `subscribe`, the lease granted (at least 1); on `unsubscribe`, the seconds the subscription had left (0 when there was none), which subscribers ignore (W3C WebSub §5.3). Not sent with `denied`.', { type: 'integer', minimum: 0 }, false),
                query('hub.reason', 'Why the subscription was removed (`denied` only).', { type: 'string' }, false),
              ],
              responses: { '2XX': { description: 'Intent confirmed: the body is the challenge.', content: { 'text/plain': { schema: { type: 'string' }, example: 'a1b2c3' } } } },
            },
          },
        },
        notification: {
          [callbackUrl]: {
            post: {
              summary: 'Content notification',
              description:
                "The topic's full current content and exact Content-Type, sent on every change. Any 2xx acknowledges and resets the failure count. A non-2xx status, a redirect (never followed), a timeout, a TLS or network error is a failure; retries always send the newest content. 410 removes the subscription at once; after 3 consecutive failures the hub sends a denial and removes it.",
              parameters: [
                { name: 'Link', in: 'header', required: true, description: 'The hub (`rel="hub"`) and the topic (`rel="self"`).', schema: { type: 'string' } },
                { name: 'X-Hub-Signature', in: 'header', required: false, description: 'Sent when the subscription has a `hub.secret`: `sha256=<hex HMAC-SHA256 of the body>`.', schema: { type: 'string', pattern: '^sha256=[0-9a-f]{64}$' } },
              ],
              requestBody: {
                required: true,
                content: {
                  'application/atom+xml': { schema: { type: 'string', description: `Topic ${urls.feedAtom}.` } },
                  'application/json': { schema: { oneOf: [ref.schema('JsonFeed'), ref.schema('ReviewsDocument')], description: `Topic ${urls.feedJson} or ${urls.reviews}.` } },
                },
              },
              responses: { '2XX': { description: 'Delivered.' }, '410': { description: 'Gone: the subscription is removed at once.' } },
            },
          },
        },
      },
    },
    get: {
      tags: ['websub'],
      operationId: 'webSubHubGetNotAllowed',
      summary: 'Not a subscription request',
      description: 'Subscription requests are form-encoded POSTs; every other method but the OPTIONS preflight gets 405.',
      responses: {
        '405': { description: 'Method Not Allowed: only POST.', headers: { Allow: { ...ref.header('Allow'), description: `\`${HUB_METHODS}\`` } }, content: TEXT_PLAIN('Only POST is served here: subscribe or unsubscribe with a form-encoded POST.') },
        '400': ref.response('BadRequestTarget'),
        ...TARGET_ERRORS,
      },
    },
    options: preflightOperation('webSubHubPreflight', 'websub', HUB_METHODS),
  };
}

/** A response as HEAD sends it: no body, so a shared one is resolved (its content cannot be dropped through a `$ref`). */
function bodiless(response: Json): Json {
  const shared = typeof response.$ref === 'string' ? RESPONSES[response.$ref.slice(RESPONSE_REF.length)] : undefined;
  // A description beside the `$ref` overrides the shared one (OAS 3.1 Reference Object).
  const { $ref: _ref, content: _content, ...withoutBody } = { ...shared, ...response };
  return withoutBody;
}

/**
 * HEAD, which node:http answers on every path that has a GET with the GET's status and headers and
 * no body (RFC 9110 §9.3.2): derived from the GET, so the two cannot drift apart.
 */
function headOperation(get: Json): Json {
  const responses = Object.fromEntries(
    Object.entries(get.responses as Record<string, Json>)
      .filter(([status]) => !GET_ONLY_STATUSES.has(status))
      .map(([status, response]) => [status, bodiless(response)]),
  );
  const parameters = (get.parameters as Reference[] | undefined)?.filter((parameter) => !GET_ONLY_PARAMETERS.some((getOnly) => getOnly.$ref === parameter.$ref));
  return { ...get, operationId: `${String(get.operationId)}Head`, summary: `${String(get.summary)} (headers only)`, description: HEAD_NOTE, ...(parameters === undefined ? {} : { parameters }), responses };
}

function withHead(paths: Record<string, Json>): Record<string, Json> {
  return Object.fromEntries(Object.entries(paths).map(([path, item]) => [path, item.get === undefined ? item : { ...item, head: headOperation(item.get as Json) }]));
}

/** The OpenAPI 3.1.0 document, generated from the same zod schemas the service validates with. */
export function buildOpenApiDocument(urls: PublicUrls): Record<string, unknown> {
  return {
    openapi: OPENAPI_VERSION,
    info: { title: 'Public Reviews Service', version: API_VERSION, description: INFO_DESCRIPTION },
    servers: [{ url: urls.base }],
    // No authentication anywhere, said in the document rather than left out.
    security: [],
    tags: [
      { name: 'datasets', description: 'The full reviews and insights datasets.' },
      { name: 'reviews', description: 'Filtered views of the reviews.' },
      { name: 'feeds', description: `The ${FEED_SIZE} newest reviews as JSON Feed and Atom.` },
      { name: 'mcp', description: 'Model Context Protocol endpoint.' },
      { name: 'websub', description: 'Push notifications of topic changes.' },
      { name: 'meta', description: 'Service description.' },
      { name: 'operations', description: 'Liveness and readiness probes.' },
    ],
    paths: withHead({ ...readPaths(urls), [PATHS.mcp]: mcpPath(), [PATHS.hub]: hubPath(urls), ...probePaths() }),
    components: components(urls),
  };
}
