import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { contentHash, JSON_CONTENT_TYPE, type Representation, type Snapshot } from '@reviews/domain';

const COMPRESSION_THRESHOLD_BYTES = 1024;

/**
 * A representation for a query result (search, since). Unlike dataset documents these are built on
 * demand, so compression uses fast settings: a cache miss must stay cheap for any query string.
 * ETags follow the same scheme as the documents: hash of the bytes, one suffix per coding.
 */
export function createQueryRepresentation(value: unknown, snapshot: Snapshot): Representation {
  const body = Buffer.from(JSON.stringify(value), 'utf8');
  const hash = contentHash(body).slice(0, 32);
  const compress = body.length >= COMPRESSION_THRESHOLD_BYTES;
  const { lastModified, lastModifiedMs } = snapshot.representations.reviews;
  return {
    contentType: JSON_CONTENT_TYPE,
    lastModified,
    lastModifiedMs,
    identity: { coding: 'identity', body, etag: `"${hash}"` },
    gzip: compress ? { coding: 'gzip', body: gzipSync(body, { level: 6 }), etag: `"${hash}-gz"` } : null,
    br: compress ? { coding: 'br', body: brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 5, [constants.BROTLI_PARAM_SIZE_HINT]: body.length } }), etag: `"${hash}-br"` } : null,
  };
}

export function representationBytes(representation: Representation): number {
  return representation.identity.body.length + (representation.gzip?.body.length ?? 0) + (representation.br?.body.length ?? 0);
}
