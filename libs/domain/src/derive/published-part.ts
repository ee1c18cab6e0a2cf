import type { DatasetInput } from '../schemas/input.js';

/**
 * What the service publishes of a dataset: its verified reviews, as the interface contract says ("publishes
 * verified customer reviews"; /reviews.json holds "the full set of verified reviews"), and the analysis of
 * those alone. A dataset may hold unverified reviews (a scraper keeps everything it found); they stay in the
 * store and in the dataset version, but no document, feed, search, tool or insight shows or counts them.
 * An FAQ answer keeps only its verified sources, and goes when none is left: it is not grounded in what is
 * published. Without unverified reviews the input itself is returned, nothing copied.
 */
export function publishedPart(input: DatasetInput): DatasetInput {
  if (input.reviews.every((review) => review.verified)) return input;
  const reviews = input.reviews.filter((review) => review.verified);
  const published = new Set(reviews.map((review) => review.id));
  const { per_review: perReview, faq } = input.analysis;
  return {
    ...input,
    reviews,
    analysis: {
      ...input.analysis,
      per_review: Object.fromEntries(Object.entries(perReview).filter(([id]) => published.has(id))),
      faq: faq.flatMap((entry) => {
        const sources = entry.source_review_ids.filter((id) => published.has(id));
        return sources.length === 0 ? [] : [{ ...entry, source_review_ids: sources }];
      }),
    },
  };
}
