import type { IncomingMessage, OutgoingHttpHeader, ServerResponse } from 'node:http';
import type { ContentCoding, Representation, Variant } from '@reviews/domain';
import { chooseContentCoding, negotiableAcceptEncoding } from './negotiate.js';
import { isNotModified, isPreconditionFailed } from './conditional.js';
import { sendError } from './errors.js';
import { CORS_HEADERS } from './cors.js';
import { ifRangeHolds, requestedRange, type ByteRange } from './byte-ranges.js';

/**
 * Caches may reuse a response for a minute, then must revalidate (cheap: a 304 by ETag). A minute
 * bounds how stale a cached copy can be after a publish without sending every reader to the origin.
 */
export const CACHE_CONTROL = 'public, max-age=60, must-revalidate';

/** One variant with its complete header lists, so a request writes them without building anything. */
interface PreparedVariant {
  readonly variant: Variant;
  /** Flat `[name, value, ...]` lists for `res.writeHead`. */
  readonly ok: OutgoingHttpHeader[];
  readonly notModified: OutgoingHttpHeader[];
  /** The 200's headers up to Content-Length, which a 206 completes with its Content-Range. */
  readonly partialBase: readonly OutgoingHttpHeader[];
}

interface Prepared {
  readonly link: string | undefined;
  /** The Last-Modified sent and compared: the version's, or when first served if that is earlier. */
  readonly lastModifiedMs: number;
  readonly lastModifiedShared: boolean;
  readonly available: ReadonlySet<ContentCoding>;
  readonly byCoding: ReadonlyMap<ContentCoding, PreparedVariant>;
  readonly identity: PreparedVariant;
}

function prepareVariant(representation: Representation, variant: Variant, link: string | undefined, lastModified: string): PreparedVariant {
  const common: OutgoingHttpHeader[] = [...CORS_HEADERS, 'ETag', variant.etag, 'Cache-Control', CACHE_CONTROL, 'Vary', 'Accept-Encoding'];
  if (link !== undefined) common.push('Link', link);
  // A 304 carries no Last-Modified: RFC 9110 §15.4.5 asks for no representation metadata beyond
  // ETag, Vary and the cache fields when an ETag is there to guide the cache update.
  const partialBase = [...common, 'Last-Modified', lastModified, 'Content-Type', representation.contentType];
  if (variant.coding !== 'identity') partialBase.push('Content-Encoding', variant.coding);
  partialBase.push('Accept-Ranges', 'bytes');
  return { variant, ok: [...partialBase, 'Content-Length', variant.body.length], notModified: common, partialBase };
}

/**
 * A GET with `Range` (§14.2, after the preconditions as §13.2.2 orders them): one range of the
 * negotiated variant's bytes as 206, a 416 naming the length when no range fits, or the whole
 * representation (200) when `If-Range` does not hold or the field is to be ignored.
 */
function sendRange(req: IncomingMessage, res: ServerResponse, chosen: PreparedVariant, range: string): void {
  const { body, etag } = chosen.variant;
  // node:http joins a field sent on several lines into one string (an array only for Set-Cookie).
  const ifRange = req.headers['if-range'] as string | undefined;
  const request = ifRange === undefined || ifRangeHolds(ifRange, etag) ? requestedRange(range, body.length) : { kind: 'whole' as const };
  if (request.kind === 'whole') {
    res.writeHead(200, chosen.ok);
    res.end(body);
  } else if (request.kind === 'unsatisfiable') {
    // The length depends on the negotiated coding, so the 416 varies by it as the 200 does.
    sendError(res, 416, 'range_not_satisfiable', `No range in Range selects any of the ${body.length} bytes of this representation (those of its content-coding, when one was negotiated): each starts past the end or is a suffix of 0 bytes.`, {
      headers: { 'Content-Range': `bytes */${body.length}`, Vary: 'Accept-Encoding' },
    });
  } else {
    writePartial(res, chosen, request.range);
  }
}

function writePartial(res: ServerResponse, chosen: PreparedVariant, { first, last }: ByteRange): void {
  const { body } = chosen.variant;
  res.writeHead(206, [...chosen.partialBase, 'Content-Range', `bytes ${first}-${last}/${body.length}`, 'Content-Length', last - first + 1]);
  res.end(body.subarray(first, last + 1));
}

/**
 * A dataset stamped later than this server's clock (a file dated ahead, a publisher's clock running
 * fast) must not be served as modified in the future: RFC 9110 §8.8.2.1 makes it the time of first
 * serving instead, so Last-Modified never passes Date and If-Modified-Since keeps working.
 */
function servableLastModifiedMs(representation: Representation): number {
  const now = Math.floor(Date.now() / 1000) * 1000;
  if (representation.lastModifiedMs <= now) return representation.lastModifiedMs;
  // The second before this one: node:http's Date header is a string it renews by a timer, which can
  // fire just after the second turns (a test saw Date one second behind), and Last-Modified must not
  // pass the Date it goes out with. (The follower already dates a version from the future when it
  // builds it, after the one it replaces: lastModifiedAfter. This is for representations made otherwise.)
  return now - 1000;
}

function prepare(representation: Representation, link: string | undefined): Prepared {
  const lastModifiedMs = servableLastModifiedMs(representation);
  const lastModified = lastModifiedMs === representation.lastModifiedMs ? representation.lastModified : new Date(lastModifiedMs).toUTCString();
  const variants = [representation.identity, representation.gzip, representation.br].filter((variant): variant is Variant => variant !== null);
  const byCoding = new Map(variants.map((variant) => [variant.coding, prepareVariant(representation, variant, link, lastModified)]));
  return { link, lastModifiedMs, lastModifiedShared: representation.lastModifiedShared, available: new Set(byCoding.keys()), byCoding, identity: byCoding.get('identity')! };
}

/**
 * Per representation, prepared on first use: requests only pick from it. A representation belongs
 * to one dataset version and so has one Link value; another one replaces the entry.
 */
const preparedCache = new WeakMap<Representation, Prepared>();

function preparedFor(representation: Representation, link: string | undefined): Prepared {
  let prepared = preparedCache.get(representation);
  if (prepared === undefined || prepared.link !== link) {
    prepared = prepare(representation, link);
    preparedCache.set(representation, prepared);
  }
  return prepared;
}

export interface SendOptions {
  /** `Link` header (the WebSub hub and self URL on topics). */
  readonly link?: string;
}

/**
 * The fast path for a precomputed GET/HEAD representation, straight on node:http: picks the
 * precompressed variant, answers conditionals with 412 or 304 (RFC 9110 §13.2.2), a byte range with
 * 206 or 416, and writes prepared headers and bytes in
 * one `writeHead` (headers set earlier with `setHeader`, such as `Connection: close` while
 * draining, are kept). Node drops the body of a HEAD response itself, keeping Content-Length.
 */
export function sendRepresentation(req: IncomingMessage, res: ServerResponse, representation: Representation, options?: SendOptions): void {
  const prepared = preparedFor(representation, options?.link);
  const { headers } = req;
  const acceptEncoding = negotiableAcceptEncoding(req);
  const chosen = acceptEncoding === undefined || prepared.byCoding.size === 1 ? prepared.identity : (prepared.byCoding.get(chooseContentCoding(acceptEncoding, prepared.available)) ?? prepared.identity);
  if ((headers['if-match'] !== undefined || headers['if-unmodified-since'] !== undefined) && isPreconditionFailed(headers, { etag: chosen.variant.etag, lastModifiedMs: prepared.lastModifiedMs, lastModifiedShared: prepared.lastModifiedShared }, req.rawHeaders)) {
    sendError(res, 412, 'precondition_failed', 'If-Match or If-Unmodified-Since does not hold for the current representation.');
    return;
  }
  if ((headers['if-none-match'] !== undefined || headers['if-modified-since'] !== undefined) && isNotModified(headers, { etag: chosen.variant.etag, lastModifiedMs: prepared.lastModifiedMs, lastModifiedShared: prepared.lastModifiedShared }, req.rawHeaders)) {
    res.writeHead(304, chosen.notModified);
    res.end();
    return;
  }
  // Range is defined for GET only (§14.2): a HEAD gets the 200's headers.
  if (headers.range !== undefined && req.method === 'GET') {
    sendRange(req, res, chosen, headers.range);
    return;
  }
  res.writeHead(200, chosen.ok);
  res.end(chosen.variant.body);
}
