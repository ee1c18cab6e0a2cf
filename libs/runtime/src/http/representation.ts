import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ContentCoding, Representation, Variant } from '@reviews/domain';
import { chooseContentCoding } from './negotiate.js';
import { isNotModified } from './conditional.js';
import { setCorsHeaders } from './cors.js';

/**
 * Caches may reuse a response for a minute, then must revalidate (cheap: a 304 by ETag). A minute
 * bounds how stale a cached copy can be after a publish without sending every reader to the origin.
 */
export const CACHE_CONTROL = 'public, max-age=60, must-revalidate';

interface Variants {
  readonly byCoding: ReadonlyMap<ContentCoding, Variant>;
  readonly available: ReadonlySet<ContentCoding>;
}

/** Per representation, computed on first use: requests only pick from it. */
const variantCache = new WeakMap<Representation, Variants>();

function variantsOf(representation: Representation): Variants {
  let variants = variantCache.get(representation);
  if (!variants) {
    const byCoding = new Map<ContentCoding, Variant>([['identity', representation.identity]]);
    if (representation.gzip) byCoding.set('gzip', representation.gzip);
    if (representation.br) byCoding.set('br', representation.br);
    variants = { byCoding, available: new Set(byCoding.keys()) };
    variantCache.set(representation, variants);
  }
  return variants;
}

function variantFor(representation: Representation, acceptEncoding: string | undefined): Variant {
  const { byCoding, available } = variantsOf(representation);
  return byCoding.get(chooseContentCoding(acceptEncoding, available)) ?? representation.identity;
}

export interface SendOptions {
  /** `Link` header (the WebSub hub and self URL on topics). */
  readonly link?: string;
}

/**
 * The fast path for a precomputed GET/HEAD representation, straight on node:http: picks the
 * precompressed variant, answers conditionals with 304, and writes exact headers and bytes.
 * Node drops the body of a HEAD response itself, keeping Content-Length.
 */
export function sendRepresentation(req: IncomingMessage, res: ServerResponse, representation: Representation, options: SendOptions = {}): void {
  const variant = variantFor(representation, req.headers['accept-encoding']);
  setCorsHeaders(res);
  res.setHeader('ETag', variant.etag);
  res.setHeader('Last-Modified', representation.lastModified);
  res.setHeader('Cache-Control', CACHE_CONTROL);
  res.setHeader('Vary', 'Accept-Encoding');
  if (options.link !== undefined) res.setHeader('Link', options.link);
  if (isNotModified(req.headers, { etag: variant.etag, lastModifiedMs: representation.lastModifiedMs })) {
    res.statusCode = 304;
    res.end();
    return;
  }
  res.statusCode = 200;
  res.setHeader('Content-Type', representation.contentType);
  if (variant.coding !== 'identity') res.setHeader('Content-Encoding', variant.coding);
  res.setHeader('Content-Length', variant.body.length);
  res.end(variant.body);
}
