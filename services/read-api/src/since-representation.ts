import { contentHash, JSON_CONTENT_TYPE, variantOf, type Representation, type Snapshot } from '@reviews/domain';
import { createQueryRepresentation, resultLastModified } from './query-representation.js';

/** Where reviews.json's reviews array starts in its identity body, and where each review in it ends. */
interface ReviewSpans {
  readonly body: Buffer;
  readonly arrayStart: number;
  readonly ends: Int32Array;
}

const REVIEWS_KEY = Buffer.from('"reviews":[');
const spansBySnapshot = new WeakMap<Snapshot, ReviewSpans | null>();

/**
 * The spans of the reviews in reviews.json's bytes, measured once per snapshot, or null when the
 * body does not end with its reviews array as expected (then results are serialized as search's are).
 */
function reviewSpans(snapshot: Snapshot): ReviewSpans | null {
  let spans = spansBySnapshot.get(snapshot);
  if (spans !== undefined) return spans;
  const body = snapshot.representations.reviews.identity.body;
  const lengths = snapshot.reviewsDocument.reviews.map((review) => Buffer.byteLength(JSON.stringify(review)));
  // {…,"reviews":[r0,r1,…]}: the array, then the document's closing brace.
  const arrayLength = 2 + lengths.reduce((sum, length) => sum + length, 0) + Math.max(0, lengths.length - 1);
  const arrayStart = body.length - 1 - arrayLength;
  const ends = new Int32Array(lengths.length);
  let end = arrayStart + 1;
  lengths.forEach((length, i) => (ends[i] = end += length + (i === 0 ? 0 : 1)));
  const fits = arrayStart >= REVIEWS_KEY.length - 1 && body.subarray(arrayStart + 1 - REVIEWS_KEY.length, arrayStart + 1).equals(REVIEWS_KEY) && body[body.length - 2] === 0x5d;
  spans = fits ? { body, arrayStart, ends } : null;
  spansBySnapshot.set(snapshot, spans);
  return spans;
}

/**
 * GET /api/reviews/since/{date}: every review on or after `date`, which is a prefix of reviews.json's
 * newest-first array. Its bytes are cut from reviews.json's own instead of serialized again, and its
 * ETag is derived from that document's and the prefix's length: the complexity audit measured 170 ms
 * of CPU per distinct old date at 20,000 reviews (serializing and hashing 11 MB), and a cache cannot
 * hold every date. The bytes equal JSON.stringify of the SinceResult, as search's results are made.
 */
export function createSinceRepresentation(snapshot: Snapshot, date: string): Representation {
  const result = snapshot.search.since(date);
  const spans = reviewSpans(snapshot);
  // The engine's reviews are the document's, newest first: a result is a prefix of them, or empty.
  if (spans === null || (result.matched > 0 && result.reviews[0] !== snapshot.reviewsDocument.reviews[0])) return createQueryRepresentation(result, snapshot);
  const { body, arrayStart, ends } = spans;
  const count = result.matched;
  // One copy of the cut: the reviews are most of the body (11 MB at 20,000 reviews).
  const reviews = count === 0 ? Buffer.from('[') : body.subarray(arrayStart, ends[count - 1]);
  const bytes = Buffer.concat([Buffer.from(`{"since":${JSON.stringify(result.since)},"matched":${count},"reviews":`), reviews, Buffer.from(']}')]);
  const hash = contentHash(`since\n${snapshot.representations.reviews.identity.etag}\n${result.since}\n${count}`);
  return { contentType: JSON_CONTENT_TYPE, ...resultLastModified(snapshot), identity: variantOf('identity', bytes, hash), gzip: null, br: null };
}
