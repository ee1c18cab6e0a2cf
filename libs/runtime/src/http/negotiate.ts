import type { IncomingMessage } from 'node:http';
import type { ContentCoding } from '@reviews/domain';
import { isRepeatedField } from './conditional.js';

/** Server preference when the client weighs codings equally: smallest body first. */
const PREFERENCE: readonly ContentCoding[] = ['br', 'gzip', 'identity'];

interface Weights {
  readonly explicit: Map<string, number>;
  readonly star: number | undefined;
  /** Lowest positive weight listed, 1 when none is. */
  readonly lowestListed: number;
}

/**
 * The elements of a weighted list header (Accept, Accept-Encoding), in order: each lower-cased name
 * (a media range or a coding; other parameters dropped) with its weight, 1 when none is given.
 */
export function weightedElements(header: string): Array<readonly [name: string, q: number]> {
  const elements: Array<readonly [string, number]> = [];
  for (const element of header.split(',')) {
    const [rawName, ...params] = element.split(';');
    const name = rawName?.trim().toLowerCase();
    if (!name) continue;
    let q = 1;
    for (const param of params) {
      const [key, value] = param.split('=').map((part) => part.trim().toLowerCase());
      if (key !== 'q') continue;
      // RFC 9110 §12.4.2 qvalue: 0 to 1 with at most three decimals; anything else voids the element.
      q = value !== undefined && /^(0(\.\d{0,3})?|1(\.0{0,3})?)$/.test(value) ? Number(value) : Number.NaN;
    }
    if (!Number.isNaN(q)) elements.push([name, q]);
  }
  return elements;
}

function parseAcceptEncoding(header: string): Weights {
  const explicit = new Map<string, number>();
  let star: number | undefined;
  for (const [name, q] of weightedElements(header)) {
    const coding = name === 'x-gzip' ? 'gzip' : name;
    if (coding === '*') star = q;
    else explicit.set(coding, Math.max(q, explicit.get(coding) ?? 0));
  }
  const positive = [...explicit.values()].filter((q) => q > 0);
  return { explicit, star, lowestListed: Math.min(1, ...positive) };
}

/**
 * Clients send a handful of distinct Accept-Encoding values (`gzip, deflate, br`, ...), so parsing
 * each once keeps requests free of splitting and regexes. Bounded by entries and header length so
 * arbitrary headers cannot grow it: past the bound it starts over.
 */
const MAX_CACHED_HEADERS = 256;
const MAX_CACHED_HEADER_LENGTH = 256;
const weightsCache = new Map<string, Weights>();

function weightsOf(header: string): Weights {
  let weights = weightsCache.get(header);
  if (weights === undefined) {
    weights = parseAcceptEncoding(header);
    if (header.length <= MAX_CACHED_HEADER_LENGTH) {
      if (weightsCache.size >= MAX_CACHED_HEADERS) weightsCache.clear();
      weightsCache.set(header, weights);
    }
  }
  return weights;
}

function weightOf(coding: ContentCoding, weights: Weights): number {
  const explicit = weights.explicit.get(coding);
  if (explicit !== undefined) return explicit;
  if (weights.star !== undefined) return weights.star;
  // identity is acceptable unless excluded (RFC 9110 §12.5.3), but a client that weighs its listed
  // codings (`br;q=0.5, gzip;q=0.8`) still prefers them: unlisted identity gets the lowest listed weight.
  return coding === 'identity' ? weights.lowestListed : 0;
}

/**
 * The Accept-Encoding to negotiate with, or undefined (identity) when the field comes on more than one
 * line. node:http joins the lines, as RFC 9110 §5.3 reads them, but Varnish picks a cached variant by
 * the first line alone: a br answer to `gzip` + `br` lines was stored for, and served from the cache
 * to, every client that accepts gzip but not br. Identity suits any cache key. (Joined lines always
 * hold a comma, so a single-coding line costs no scan.)
 */
export function negotiableAcceptEncoding(req: IncomingMessage): string | undefined {
  const value = req.headers['accept-encoding'];
  return value !== undefined && value.includes(',') && isRepeatedField(req.rawHeaders, 'accept-encoding') ? undefined : value;
}

/**
 * Picks the content coding for a response among those available, per RFC 9110 §12.5.3: q=0 excludes,
 * `*` covers unlisted codings, ties go to br > gzip > identity. With no acceptable coding the
 * response goes out unencoded, which the RFC allows and every client can read.
 */
export function chooseContentCoding(acceptEncoding: string | undefined, available: ReadonlySet<ContentCoding>): ContentCoding {
  if (acceptEncoding === undefined) return 'identity';
  const weights = weightsOf(acceptEncoding);
  let best: ContentCoding = 'identity';
  let bestWeight = 0;
  for (const coding of PREFERENCE) {
    if (!available.has(coding)) continue;
    const weight = weightOf(coding, weights);
    if (weight > bestWeight) {
      best = coding;
      bestWeight = weight;
    }
  }
  return best;
}
