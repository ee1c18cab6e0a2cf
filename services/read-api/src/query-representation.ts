import { brotliBody, COMPRESSION_THRESHOLD_BYTES, contentHash, gzipBody, JSON_CONTENT_TYPE, representationHash, variantOf, type CompressionSettings, type ContentCoding, type Representation, type Snapshot } from '@reviews/domain';
import { chooseContentCoding } from '@reviews/runtime';

/**
 * Larger results are sent as they are: compressing one costs the serving thread ~20 ms a MiB (the
 * complexity audit: 224 ms for a since-query returning 11 MB), and each distinct query is a cache
 * miss. Search returns at most 100 reviews, well below; /reviews.json has every review precompressed.
 */
const MAX_COMPRESSED_BYTES = 1024 * 1024;

/**
 * Settings for query results, measured in docs/adr/0006-compression.md ("Query results"): built on
 * a cache miss while the client waits, so cheap ones. Fixed, never tuned per request or per body,
 * so every replica produces the same bytes under the same ETag.
 */
const QUERY_COMPRESSION: CompressionSettings = { gzipLevel: 6, brotliQuality: 5 };

const ALL_CODINGS: ReadonlySet<ContentCoding> = new Set(['identity', 'gzip', 'br']);
const IDENTITY_ONLY: ReadonlySet<ContentCoding> = new Set(['identity']);

/**
 * A result's Last-Modified: results depend on reviews.json and on insights.json (the per-review
 * analysis behind mentions_technician, mentions_service), each dated when its bytes last changed,
 * so the later of the two; a second both share is shared when either says so.
 */
export function resultLastModified(snapshot: Snapshot): Pick<Representation, 'lastModified' | 'lastModifiedMs' | 'lastModifiedShared'> {
  const { reviews, insights } = snapshot.representations;
  if (reviews.lastModifiedMs === insights.lastModifiedMs) {
    return { lastModified: reviews.lastModified, lastModifiedMs: reviews.lastModifiedMs, lastModifiedShared: reviews.lastModifiedShared || insights.lastModifiedShared };
  }
  return reviews.lastModifiedMs > insights.lastModifiedMs ? reviews : insights;
}

/**
 * A representation for a query result (search, since), with the identity body only: most results
 * are asked for by one client with one coding, so compressed variants are added by `withVariantFor`
 * when a request negotiates them. ETags follow the documents' scheme: hash of the bytes, one suffix per coding.
 */
export function createQueryRepresentation(value: unknown, snapshot: Snapshot): Representation {
  const body = Buffer.from(JSON.stringify(value), 'utf8');
  const { lastModified, lastModifiedMs, lastModifiedShared } = resultLastModified(snapshot);
  return { contentType: JSON_CONTENT_TYPE, lastModified, lastModifiedMs, lastModifiedShared, identity: variantOf('identity', body, contentHash(body)), gzip: null, br: null };
}

/** The coding a request gets for this result once every variant it may have exists. */
function negotiatedCoding(representation: Representation, acceptEncoding: string | undefined): ContentCoding {
  const size = representation.identity.body.length;
  const codings = size >= COMPRESSION_THRESHOLD_BYTES && size <= MAX_COMPRESSED_BYTES ? ALL_CODINGS : IDENTITY_ONLY;
  return chooseContentCoding(acceptEncoding, codings);
}

function compress(representation: Representation, coding: 'gzip' | 'br'): Representation {
  const { body } = representation.identity;
  const compressed = coding === 'gzip' ? gzipBody(body, QUERY_COMPRESSION) : brotliBody(body, QUERY_COMPRESSION);
  return { ...representation, [coding]: variantOf(coding, compressed, representationHash(representation)) };
}

/**
 * `representation` itself when it already holds the variant `acceptEncoding` negotiates, otherwise
 * a copy with that variant added (the caller caches the copy). Negotiating over the subset of
 * variants built so far then picks the same coding, since ties break in a fixed order.
 */
export function withVariantFor(representation: Representation, acceptEncoding: string | undefined): Representation {
  // A popular result soon holds every variant: its cache hits then skip negotiating twice.
  if (representation.gzip !== null && representation.br !== null) return representation;
  const coding = negotiatedCoding(representation, acceptEncoding);
  if (coding === 'identity' || representation[coding] !== null) return representation;
  return compress(representation, coding);
}

export function representationBytes(representation: Representation): number {
  return representation.identity.body.length + (representation.gzip?.body.length ?? 0) + (representation.br?.body.length ?? 0);
}
