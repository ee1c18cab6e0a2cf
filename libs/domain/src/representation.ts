import { createHash } from 'node:crypto';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

export type ContentCoding = 'identity' | 'gzip' | 'br';

export interface Variant {
  readonly coding: ContentCoding;
  readonly body: Buffer;
  /** Strong ETag (quoted). Differs per content-coding, as RFC 9110 §8.8.3 requires. */
  readonly etag: string;
}

/**
 * One served document at one dataset version: bytes, their compressed variants and validators,
 * computed once so a request only picks a variant and writes it.
 */
export interface Representation {
  readonly contentType: string;
  /** RFC 9110 HTTP-date of the version's last modification (lastModifiedAfter). */
  readonly lastModified: string;
  readonly lastModifiedMs: number;
  /**
   * The version before it had the same Last-Modified second: a date equal to it does not tell the
   * two apart, so If-Modified-Since of that date must not be answered 304.
   */
  readonly lastModifiedShared: boolean;
  readonly identity: Variant;
  readonly gzip: Variant | null;
  readonly br: Variant | null;
}

/** Below this size compression saves less than its headers cost. */
export const COMPRESSION_THRESHOLD_BYTES = 1024;

/**
 * The hash ETags and dataset versions are made of: the first 192 bits of SHA-256, in base64url (32
 * characters), the same on every replica for the same bytes.
 */
export function contentHash(bytes: Buffer | string): string {
  return createHash('sha256').update(bytes).digest('base64url').slice(0, 32);
}

/**
 * Compression settings by body size, measured in docs/adr/0006-compression.md. Bodies up to 64 KiB
 * (the feeds and the OpenAPI document, fetched most often) get brotli 10: within ~1.5% of quality
 * 11's bytes at a third of its time (~35 ms instead of ~100 ms per feed, paid on every swap);
 * beyond 1 MiB (datasets of thousands of reviews) quality 6 and gzip 6 keep a 10,000-review build
 * within its swap budget. Sizes alone pick the settings, so every replica produces the same bytes
 * for the same ETag.
 */
export interface CompressionSettings {
  readonly brotliQuality: number;
  readonly gzipLevel: number;
}

export function compressionSettings(size: number): CompressionSettings {
  if (size <= 64 * 1024) return { brotliQuality: 10, gzipLevel: 9 };
  if (size <= 1024 * 1024) return { brotliQuality: 9, gzipLevel: 9 };
  return { brotliQuality: 6, gzipLevel: 6 };
}

/** The compressed variants' bodies of one identity body. */
export interface CompressedBodies {
  readonly gzip: Buffer;
  /** Null when the build leaves brotli for later (`withBrotli` adds it once made). */
  readonly br: Buffer | null;
}

/** Compresses an identity body whose content hash is `hash` (a memo may key on it). */
export type Compress = (identity: Buffer, hash: string) => CompressedBodies;

/** gzip with the level the body's size picks (or fixed `settings`): the same bytes on every replica. */
export function gzipBody(identity: Buffer, settings: CompressionSettings = compressionSettings(identity.length)): Buffer {
  return gzipSync(identity, { level: settings.gzipLevel });
}

/** brotli with the quality the body's size picks (or fixed `settings`): the same bytes on every replica. */
export function brotliBody(identity: Buffer, settings: CompressionSettings = compressionSettings(identity.length)): Buffer {
  return brotliCompressSync(identity, { params: { [constants.BROTLI_PARAM_QUALITY]: settings.brotliQuality, [constants.BROTLI_PARAM_SIZE_HINT]: identity.length } });
}

export function compressBody(identity: Buffer): CompressedBodies {
  return { gzip: gzipBody(identity), br: brotliBody(identity) };
}

/** The content hash a representation's validators are made of (its identity ETag, unquoted). */
export function representationHash(representation: Representation): string {
  return representation.identity.etag.slice(1, -1);
}

const ETAG_SUFFIX: Record<ContentCoding, string> = { identity: '', gzip: '-gz', br: '-br' };

/**
 * The variant of a body in one coding, whose identity bytes hash to `hash`: its strong ETag is the
 * hash with the coding's suffix, the one scheme documents and query results share on every replica.
 */
export function variantOf(coding: ContentCoding, body: Buffer, hash: string): Variant {
  return { coding, body, etag: `"${hash}${ETAG_SUFFIX[coding]}"` };
}

/** `representation` with the brotli variant its build left for later. */
export function withBrotli(representation: Representation, br: Buffer): Representation {
  return { ...representation, br: variantOf('br', br, representationHash(representation)) };
}

/** When a dataset version was last modified, as Last-Modified tells it: whole seconds. */
export interface LastModified {
  readonly at: Date;
  /** The version it replaced was last modified in the same second. */
  readonly shared: boolean;
}

function wholeSeconds(ms: number): number {
  return Math.floor(ms / 1000) * 1000;
}

/**
 * The Last-Modified of a version replacing one last modified at `previousMs` (null for the first):
 * its publish time, never ahead of the clock (RFC 9110 §8.8.2.1). Last-Modified must move forward
 * with each version, or a client holding the previous one gets a 304 for this one from
 * If-Modified-Since; a publish time not after the previous version's (two publishes in one second, a
 * dataset file stamped earlier than the one it replaced) gives way to the time of replacing. Within
 * the previous version's own second nothing later may be sent yet, so the second is marked shared.
 */
export function lastModifiedAfter(publishedAt: Date, previousMs: number | null, nowMs: number): LastModified {
  const now = wholeSeconds(nowMs);
  let at = Math.min(wholeSeconds(publishedAt.getTime()), now);
  if (previousMs !== null && at <= previousMs) at = Math.max(now, previousMs);
  return { at: new Date(at), shared: at === previousMs };
}

export function createRepresentation(body: Buffer | string, contentType: string, lastModified: LastModified, compress: Compress = compressBody): Representation {
  const identityBody = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  const hash = contentHash(identityBody);
  const compressed = identityBody.length >= COMPRESSION_THRESHOLD_BYTES ? compress(identityBody, hash) : null;
  return {
    contentType,
    lastModified: lastModified.at.toUTCString(),
    lastModifiedMs: wholeSeconds(lastModified.at.getTime()),
    lastModifiedShared: lastModified.shared,
    identity: variantOf('identity', identityBody, hash),
    gzip: compressed ? variantOf('gzip', compressed.gzip, hash) : null,
    br: compressed?.br ? variantOf('br', compressed.br, hash) : null,
  };
}
