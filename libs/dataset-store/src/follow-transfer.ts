import type { PerReviewAnalysis, Review, SnapshotContent } from '@reviews/domain';
import { detachBodies, reviveBodies, type ContentOutcome } from './follow-build.js';

/**
 * How a built snapshot crosses from the build worker to the serving thread. Deserializing a
 * structured clone is one uninterruptible task on the receiving thread (~50-120 ms for 10,000
 * reviews), so the bulk — the reviews and their per-review analyses — goes in slices, each
 * acknowledged before the next is sent: requests run between slices. The rest (documents without
 * those, bodies and index tables, transferred) follows in one last message.
 */
export const REVIEWS_PER_SLICE = 500;

export type BuildMessage =
  | { readonly kind: 'reviews'; readonly reviews: Review[] }
  | { readonly kind: 'analyses'; readonly entries: [string, PerReviewAnalysis][] }
  | { readonly kind: 'done'; readonly outcome: ContentOutcome; readonly newestFirst: Int32Array | null };

/** The messages of one outcome, in sending order, and what the last one transfers. */
export function* buildMessages(outcome: ContentOutcome): Generator<{ message: BuildMessage; transfer: ArrayBuffer[] }> {
  if (!outcome.ok) {
    yield { message: { kind: 'done', outcome, newestFirst: null }, transfer: [] };
    return;
  }
  const { content } = outcome;
  const { input, reviewsDocument, insightsDocument } = content;
  for (let i = 0; i < input.reviews.length; i += REVIEWS_PER_SLICE) yield { message: { kind: 'reviews', reviews: input.reviews.slice(i, i + REVIEWS_PER_SLICE) }, transfer: [] };
  // One object serves as input.analysis.per_review and insightsDocument.per_review.
  const analyses = Object.entries(input.analysis.per_review);
  for (let i = 0; i < analyses.length; i += REVIEWS_PER_SLICE) yield { message: { kind: 'analyses', entries: analyses.slice(i, i + REVIEWS_PER_SLICE) }, transfer: [] };
  const inputIndex = new Map(input.reviews.map((review, index) => [review, index]));
  const newestFirst = Int32Array.from(reviewsDocument.reviews, (review) => inputIndex.get(review) as number);
  const rest: SnapshotContent = {
    ...content,
    input: { ...input, reviews: [], analysis: { ...input.analysis, per_review: {} } },
    reviewsDocument: { ...reviewsDocument, reviews: [] },
    insightsDocument: { ...insightsDocument, per_review: {} },
  };
  yield { message: { kind: 'done', outcome: { ok: true, content: rest }, newestFirst }, transfer: [...detachBodies(rest), newestFirst.buffer as ArrayBuffer] };
}

/** Collects the messages of one build on the serving thread; `done` returns the whole outcome. */
export class ContentReceiver {
  readonly #reviews: Review[] = [];
  readonly #analyses: Record<string, PerReviewAnalysis> = {};

  /** The outcome once the last message arrived, otherwise undefined (acknowledge and wait). */
  receive(message: BuildMessage): ContentOutcome | undefined {
    if (message.kind === 'reviews') {
      for (const review of message.reviews) this.#reviews.push(review);
      return undefined;
    }
    if (message.kind === 'analyses') {
      for (const [id, analysis] of message.entries) this.#analyses[id] = analysis;
      return undefined;
    }
    const { outcome, newestFirst } = message;
    if (!outcome.ok || newestFirst === null) return outcome;
    const content = reviveBodies(outcome.content);
    const reviews = this.#reviews;
    const perReview = this.#analyses;
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
}
