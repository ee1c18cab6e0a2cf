import { deserialize, serialize } from 'node:v8';
import { publishedAnalyses, sameJsonValue, unpublishedIds, type InsightsDocument, type PerReviewAnalysis, type Review, type SnapshotContent } from '@reviews/domain';
import { buildError, detachBodies, reviveBodies, type BuildRequest, type ContentOutcome } from './follow-build.js';

/**
 * How a built snapshot crosses from the build worker to the serving thread: one message, every byte
 * of it transferred. Deserializing is one uninterruptible task on the receiving thread (~50-120 ms
 * for 10,000 reviews at once), so the bulk — the reviews and their per-review analyses — is
 * serialized on the worker in slices that the serving thread deserializes one per task, requests
 * running in between. Everything is in that one message, so the worker can end before the serving
 * thread builds its copy (see follow-offthread.ts).
 *
 * A new version mostly repeats the one being served (an edited reply, reviews appended): a slice
 * whose items equal the same slice of the version the serving thread holds is neither serialized nor
 * sent, and the serving thread reuses that version's objects for it. At 10,000 reviews deserializing
 * every slice took ~150-200 ms of the serving thread's CPU per swap, spread over half a second of
 * requests. Items are compared as values, not as serialized bytes: V8 writes the same number as an
 * integer or a double depending on how it was produced, so equal slices serialized differently.
 */
export const REVIEWS_PER_SLICE = 100;

/** A slice the worker did not send: the same slice of the held version, whose objects are reused. */
type Slice = Uint8Array | null;

export interface BuildMessage {
  /** On success, the content without its reviews and per-review analyses: those are in the slices. */
  readonly outcome: ContentOutcome;
  /** `v8.serialize` of `Review[]`, in input order. */
  readonly reviewSlices: readonly Slice[];
  /** `v8.serialize` of `[review id, analysis][]`. */
  readonly analysisSlices: readonly Slice[];
  /** The newest-first order as indexes into the input's reviews, so both documents share the same review objects. */
  readonly newestFirst: Int32Array | null;
  /** The version whose objects the slices not sent (null) are taken from. */
  readonly reusedVersion: string | null;
}

/**
 * After the content of a build that deferred brotli (always: empty when nothing was deferred or the
 * dataset was refused): the brotli bodies by content hash, their buffers transferred.
 */
export interface LateBrotliMessage {
  readonly brotli: Map<string, Uint8Array>;
}

/** The reviews and analyses of the last content a worker sent, kept to find the slices the next build repeats. */
export interface SentItems {
  readonly version: string;
  readonly reviews: readonly Review[];
  readonly analyses: readonly (readonly [string, PerReviewAnalysis])[];
}

/** The version the serving thread holds, whose reviews and analyses a build may reuse. */
export type HeldContent = Pick<SnapshotContent, 'version' | 'input'>;

/** A build request as posted to the worker: with the version the serving thread holds. */
export type WorkerRequest = BuildRequest & { readonly heldVersion: string | null };

/** `v8.serialize` of each slice of `items`, or null where the same slice of `held` has equal items (keys in the order the serving thread would render them). */
function serializedSlices<T>(items: readonly T[], held: readonly T[] | undefined): Slice[] {
  const slices: Slice[] = [];
  for (let i = 0; i < items.length; i += REVIEWS_PER_SLICE) {
    const slice = items.slice(i, i + REVIEWS_PER_SLICE);
    const repeated = held !== undefined && i + slice.length <= held.length && slice.every((item, j) => sameJsonValue(item, held[i + j]));
    slices.push(repeated ? null : serialize(slice));
  }
  return slices;
}

/**
 * The worker's message for one outcome, the buffers it transfers, and the items to keep for the next
 * build. `held` is what the worker kept from the build whose version the serving thread holds now,
 * if it is that one.
 */
export function packOutcome(outcome: ContentOutcome, held: SentItems | null = null): { message: BuildMessage; transfer: ArrayBuffer[]; sent: SentItems | null } {
  if (!outcome.ok) return { message: { outcome, reviewSlices: [], analysisSlices: [], newestFirst: null, reusedVersion: null }, transfer: [], sent: null };
  const { content } = outcome;
  const { input, reviewsDocument, insightsDocument } = content;
  // Sent once, as input.analysis.per_review; insightsDocument.per_review is made from it again on arrival.
  const analyses = Object.entries(input.analysis.per_review);
  const reviewSlices = serializedSlices(input.reviews, held?.reviews);
  const analysisSlices = serializedSlices(analyses, held?.analyses);
  const reused = [...reviewSlices, ...analysisSlices].includes(null);
  const inputIndex = new Map(input.reviews.map((review, index) => [review, index]));
  const newestFirst = Int32Array.from(reviewsDocument.reviews, (review) => inputIndex.get(review) as number);
  const rest: SnapshotContent = {
    ...content,
    input: { ...input, reviews: [], analysis: { ...input.analysis, per_review: {} } },
    reviewsDocument: { ...reviewsDocument, reviews: [] },
    insightsDocument: { ...insightsDocument, per_review: {} },
  };
  const sent: SentItems = { version: content.version, reviews: input.reviews, analyses };
  // Each v8.serialize result owns its ArrayBuffer.
  const slices = [...reviewSlices, ...analysisSlices].flatMap((slice) => (slice ? [slice.buffer as ArrayBuffer] : []));
  return {
    message: { outcome: { ok: true, content: rest }, reviewSlices, analysisSlices, newestFirst, reusedVersion: reused ? (held?.version ?? null) : null },
    transfer: [...detachBodies(rest), ...slices, newestFirst.buffer as ArrayBuffer],
    sent,
  };
}

/**
 * The whole outcome on the serving thread, deserializing one sent slice per task (`betweenSlices`
 * lets requests run) and taking the others' objects from `held`, the version the build was told the
 * serving thread holds.
 */
export async function unpackOutcome(message: BuildMessage, betweenSlices: () => Promise<unknown>, held: HeldContent | null = null): Promise<ContentOutcome> {
  const { outcome, reviewSlices, analysisSlices, newestFirst, reusedVersion } = message;
  if (!outcome.ok || newestFirst === null) return outcome;
  if (reusedVersion !== null && held?.version !== reusedVersion) {
    return buildError(new Error(`the build reuses version ${reusedVersion}, but this thread holds ${held?.version ?? 'none'}`));
  }
  // Only content that left slices out reads the held version.
  const heldReviews = reusedVersion !== null && held ? held.input.reviews : [];
  const heldAnalyses = reusedVersion !== null && held ? Object.entries(held.input.analysis.per_review) : [];
  const reviews: Review[] = [];
  const perReview: Record<string, PerReviewAnalysis> = {};
  for (const [k, slice] of reviewSlices.entries()) {
    if (slice === null) {
      reviews.push(...heldReviews.slice(k * REVIEWS_PER_SLICE, (k + 1) * REVIEWS_PER_SLICE));
      continue;
    }
    await betweenSlices();
    for (const review of deserialize(slice) as Review[]) reviews.push(review);
  }
  for (const [k, slice] of analysisSlices.entries()) {
    let entries: [string, PerReviewAnalysis][];
    if (slice === null) {
      entries = heldAnalyses.slice(k * REVIEWS_PER_SLICE, (k + 1) * REVIEWS_PER_SLICE);
    } else {
      await betweenSlices();
      entries = deserialize(slice) as [string, PerReviewAnalysis][];
    }
    for (const [id, analysis] of entries) perReview[id] = analysis;
  }
  const content = reviveBodies(outcome.content);
  const input = { ...content.input, reviews, analysis: { ...content.input.analysis, per_review: perReview } };
  return {
    ok: true,
    content: {
      ...content,
      input,
      reviewsDocument: { ...content.reviewsDocument, reviews: Array.from(newestFirst, (index) => reviews[index] as Review) },
      insightsDocument: withPublishedAnalyses(content.insightsDocument, perReview, unpublishedIds(reviews)),
    },
  };
}

/**
 * The insights document whose per_review holds the analyses of the published reviews alone (publishedPart),
 * made on first read. Nothing on the serving thread reads it (the worker rendered the bytes and built the
 * search index), and making a second map of every analysis at the swap added 10-15 ms to its largest
 * event-loop delay at 10,000 reviews (one task of ~400 ms at 100,000). Without unpublished reviews it is
 * the input's own map.
 */
function withPublishedAnalyses(document: InsightsDocument, perReview: Record<string, PerReviewAnalysis>, unpublished: ReadonlySet<string>): InsightsDocument {
  if (unpublished.size === 0) return { ...document, per_review: perReview };
  let published: Record<string, PerReviewAnalysis> | undefined;
  const { per_review: _sent, ...rest } = document;
  return Object.defineProperty(rest, 'per_review', { enumerable: true, get: () => (published ??= publishedAnalyses(perReview, unpublished)) }) as InsightsDocument;
}
