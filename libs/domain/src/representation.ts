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

export function createRepresentation(body: Buffer | string, contentType: string, publishedAt: Date): Representation {
  const identityBody = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  const hash = contentHash(identityBody).slice(0, 32);
  const compress = identityBody.length >= COMPRESSION_THRESHOLD_BYTES;
  // Deterministic settings: every replica must produce the same bytes and so the same ETags.
  return {
    contentType,
    lastModified: publishedAt.toUTCString(),
    lastModifiedMs: Math.floor(publishedAt.getTime() / 1000) * 1000,
    identity: { coding: 'identity', body: identityBody, etag: `"${hash}"` },
    gzip: compress ? { coding: 'gzip', body: gzipSync(identityBody, { level: 9 }), etag: `"${hash}-gz"` } : null,
    br: compress
      ? {
          coding: 'br',
          body: brotliCompressSync(identityBody, {
            params: {
              [constants.BROTLI_PARAM_QUALITY]: identityBody.length > 4 * 1024 * 1024 ? 9 : 11,
              [constants.BROTLI_PARAM_SIZE_HINT]: identityBody.length,
            },
          }),
          etag: `"${hash}-br"`,
        }
      : null,
  };
}
