import type { IncomingMessage, OutgoingHttpHeader, ServerResponse } from 'node:http';
import type { ContentCoding, Representation, Variant } from '@reviews/domain';
import { chooseContentCoding, negotiableAcceptEncoding } from './negotiate.js';
import { isNotModified, isPreconditionFailed } from './conditional.js';
import { sendError } from './errors.js';
import { CORS_HEADERS } from './cors.js';

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
  const ok = [...common, 'Last-Modified', lastModified, 'Content-Type', representation.contentType];
  if (variant.coding !== 'identity') ok.push('Content-Encoding', variant.coding);
  ok.push('Content-Length', variant.body.length);
  return { variant, ok, notModified: common };
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
 * precompressed variant, answers conditionals with 412 or 304 (RFC 9110 §13.2.2), and writes prepared headers and bytes in
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
  res.writeHead(200, chosen.ok);
  res.end(chosen.variant.body);
}
