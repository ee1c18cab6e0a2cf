import type { DatasetInput, PerReviewAnalysis } from '../schemas/input.js';
import type { Review } from '../schemas/review.js';

/**
 * What the service publishes of a dataset: its verified reviews, as the interface contract says ("publishes
 * verified customer reviews"; /reviews.json holds "the full set of verified reviews"), and the analysis of
 * those alone. A dataset may hold unverified reviews (a scraper keeps everything it found); they stay in the
 * store and in the dataset version, but no document, feed, search, tool or insight shows or counts them.
 * An FAQ answer keeps only its verified sources, and goes when none is left: it is not grounded in what is
 * published. Likewise the pull quote goes when it quotes an unverified review and no published one; one
 * that quotes no review at all is the publisher's editorial words and stays. Without unverified reviews the
 * input itself is returned, nothing copied.
 */
export function publishedPart(input: DatasetInput): DatasetInput {
  const unpublished = unpublishedIds(input.reviews);
  if (unpublished.size === 0) return input;
  return {
    ...input,
    reviews: input.reviews.filter((review) => !unpublished.has(review.id)),
    analysis: {
      ...input.analysis,
      per_review: publishedAnalyses(input.analysis.per_review, unpublished),
      faq: input.analysis.faq.flatMap((entry) => {
        const sources = entry.source_review_ids.filter((id) => !unpublished.has(id));
        return sources.length === 0 ? [] : [{ ...entry, source_review_ids: sources }];
      }),
      pull_quote: publishedQuote(input.analysis.pull_quote, input.reviews, unpublished),
    },
  };
}

function publishedQuote(quote: string | null, reviews: readonly Review[], unpublished: ReadonlySet<string>): string | null {
  if (quote === null) return null;
  const quotes = (review: Review) => review.text?.includes(quote) === true;
  const quotesUnpublished = reviews.some((review) => unpublished.has(review.id) && quotes(review));
  return !quotesUnpublished || reviews.some((review) => !unpublished.has(review.id) && quotes(review)) ? quote : null;
}

/** The ids of the reviews publishedPart leaves out: the unverified ones, a small share of a dataset if any. */
export function unpublishedIds(reviews: readonly Review[]): ReadonlySet<string> {
  const ids = new Set<string>();
  for (const review of reviews) if (!review.verified) ids.add(review.id);
  return ids;
}

/** The analyses of the published reviews, in the map's own order; no entry arrays, which at 100,000 analyses cost hundreds of ms. */
export function publishedAnalyses(perReview: Readonly<Record<string, PerReviewAnalysis>>, unpublished: ReadonlySet<string>): Record<string, PerReviewAnalysis> {
  const kept: Record<string, PerReviewAnalysis> = {};
  for (const id in perReview) if (!unpublished.has(id)) kept[id] = perReview[id] as PerReviewAnalysis;
  return kept;
}
