import { deserialize, serialize } from 'node:v8';
import type { PerReviewAnalysis, Review, SnapshotContent } from '@reviews/domain';
import { detachBodies, reviveBodies, type ContentOutcome } from './follow-build.js';

/**
 * How a built snapshot crosses from the build worker to the serving thread: one message, every byte
 * of it transferred. Deserializing is one uninterruptible task on the receiving thread (~50-120 ms
 * for 10,000 reviews at once), so the bulk — the reviews and their per-review analyses — is
 * serialized on the worker in slices that the serving thread deserializes one per task, requests
 * running in between. Everything is in that one message, so the worker can end before the serving
 * thread builds its copy (see follow-offthread.ts).
 */
export const REVIEWS_PER_SLICE = 500;

export interface BuildMessage {
  /** On success, the content without its reviews and per-review analyses: those are in the slices. */
  readonly outcome: ContentOutcome;
  /** `v8.serialize` of `Review[]`, in input order. */
  readonly reviewSlices: readonly Uint8Array[];
  /** `v8.serialize` of `[review id, analysis][]`. */
  readonly analysisSlices: readonly Uint8Array[];
  /** The newest-first order as indexes into the input's reviews, so both documents share the same review objects. */
  readonly newestFirst: Int32Array | null;
}

/**
 * After the content of a build that deferred brotli (always: empty when nothing was deferred or the
 * dataset was refused): the brotli bodies by content hash, their buffers transferred.
 */
export interface LateBrotliMessage {
  readonly brotli: Map<string, Uint8Array>;
}

function serializedSlices<T>(items: readonly T[]): Uint8Array[] {
  const slices: Uint8Array[] = [];
  for (let i = 0; i < items.length; i += REVIEWS_PER_SLICE) slices.push(serialize(items.slice(i, i + REVIEWS_PER_SLICE)));
  return slices;
}

/** The worker's message for one outcome and the buffers it transfers. */
export function packOutcome(outcome: ContentOutcome): { message: BuildMessage; transfer: ArrayBuffer[] } {
  if (!outcome.ok) return { message: { outcome, reviewSlices: [], analysisSlices: [], newestFirst: null }, transfer: [] };
  const { content } = outcome;
  const { input, reviewsDocument, insightsDocument } = content;
  const reviewSlices = serializedSlices(input.reviews);
  // One object serves as input.analysis.per_review and insightsDocument.per_review.
  const analysisSlices = serializedSlices(Object.entries(input.analysis.per_review));
  const inputIndex = new Map(input.reviews.map((review, index) => [review, index]));
  const newestFirst = Int32Array.from(reviewsDocument.reviews, (review) => inputIndex.get(review) as number);
  const rest: SnapshotContent = {
    ...content,
    input: { ...input, reviews: [], analysis: { ...input.analysis, per_review: {} } },
    reviewsDocument: { ...reviewsDocument, reviews: [] },
    insightsDocument: { ...insightsDocument, per_review: {} },
  };
  // Each v8.serialize result owns its ArrayBuffer.
  const slices = [...reviewSlices, ...analysisSlices].map((slice) => slice.buffer as ArrayBuffer);
  return { message: { outcome: { ok: true, content: rest }, reviewSlices, analysisSlices, newestFirst }, transfer: [...detachBodies(rest), ...slices, newestFirst.buffer as ArrayBuffer] };
}

/** The whole outcome on the serving thread, deserializing one slice per task (`betweenSlices` lets requests run). */
export async function unpackOutcome(message: BuildMessage, betweenSlices: () => Promise<unknown>): Promise<ContentOutcome> {
  const { outcome, reviewSlices, analysisSlices, newestFirst } = message;
  if (!outcome.ok || newestFirst === null) return outcome;
  const reviews: Review[] = [];
  const perReview: Record<string, PerReviewAnalysis> = {};
  for (const slice of reviewSlices) {
    await betweenSlices();
    for (const review of deserialize(slice) as Review[]) reviews.push(review);
  }
  for (const slice of analysisSlices) {
    await betweenSlices();
    for (const [id, analysis] of deserialize(slice) as [string, PerReviewAnalysis][]) perReview[id] = analysis;
  }
  const content = reviveBodies(outcome.content);
  return {
    ok: true,
    content: {
      ...content,
      input: { ...content.input, reviews, analysis: { ...content.input.analysis, per_review: perReview } },
      reviewsDocument: { ...content.reviewsDocument, reviews: Array.from(newestFirst, (index) => reviews[index] as Review) },
      insightsDocument: { ...content.insightsDocument, per_review: perReview },
    },
  };
}
