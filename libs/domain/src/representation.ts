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
  /** RFC 9110 HTTP-date of the dataset's publish time. */
  readonly lastModified: string;
  readonly lastModifiedMs: number;
  readonly identity: Variant;
  readonly gzip: Variant | null;
  readonly br: Variant | null;
}

/** Below this size compression saves less than its headers cost. */
const COMPRESSION_THRESHOLD_BYTES = 1024;

export function contentHash(bytes: Buffer | string): string {
  return createHash('sha256').update(bytes).digest('base64url');
}

/**
 * Compression settings by body size, measured in docs/adr/0006-compression.md. Bodies up to 64 KiB
 * (the feeds and the OpenAPI document, fetched most often) get brotli 10: within ~1.5% of quality
 * 11's bytes at a third of its time (~35 ms instead of ~100 ms per feed, paid on every swap);
 * beyond 1 MiB (datasets of thousands of reviews) quality 6 and gzip 6 keep a 10,000-review build
 * within its swap budget. Sizes alone pick the settings, so every replica produces the same bytes
 * for the same ETag.
 */
export function compressionSettings(size: number): { brotliQuality: number; gzipLevel: number } {
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

/** gzip with the level the body's size picks: the same bytes on every replica. */
export function gzipBody(identity: Buffer): Buffer {
  return gzipSync(identity, { level: compressionSettings(identity.length).gzipLevel });
}

/** brotli with the quality the body's size picks: the same bytes on every replica. */
export function brotliBody(identity: Buffer): Buffer {
  return brotliCompressSync(identity, { params: { [constants.BROTLI_PARAM_QUALITY]: compressionSettings(identity.length).brotliQuality, [constants.BROTLI_PARAM_SIZE_HINT]: identity.length } });
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

export function createRepresentation(body: Buffer | string, contentType: string, publishedAt: Date, compress: Compress = compressBody): Representation {
  const identityBody = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  const hash = contentHash(identityBody).slice(0, 32);
  const compressed = identityBody.length >= COMPRESSION_THRESHOLD_BYTES ? compress(identityBody, hash) : null;
  return {
    contentType,
    lastModified: publishedAt.toUTCString(),
    lastModifiedMs: Math.floor(publishedAt.getTime() / 1000) * 1000,
    identity: variantOf('identity', identityBody, hash),
    gzip: compressed ? variantOf('gzip', compressed.gzip, hash) : null,
    br: compressed?.br ? variantOf('br', compressed.br, hash) : null,
  };
}
