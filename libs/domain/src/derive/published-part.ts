import type { DatasetInput, PerReviewAnalysis } from '../schemas/input.js';
import type { Review } from '../schemas/review.js';

/**
 * What the service publishes of a dataset: its verified reviews, as the interface contract says ("publishes
 * verified customer reviews"; /reviews.json holds "the full set of verified reviews"), and the analysis of
 * those alone. A dataset may hold unverified reviews (a scraper keeps everything it found); they stay in the
 * store and in the dataset version, but no document, feed, search, tool or insight shows or counts them.
 * An FAQ answer keeps only its verified sources, and goes when none is left: it is not grounded in what is
 * published. Likewise the pull quote goes when it quotes an unverified review and no published one, matched
 * by its words (quotation marks, ellipses, case and a trailing attribution aside); one that quotes no
 * review at all is the publisher's editorial words and stays. Without unverified reviews the
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
  const fragments = quotedFragments(quote);
  if (fragments.length === 0) return quote;
  const quotes = (review: Review) => review.text !== null && fragmentsIn(fragments, review.text);
  const quotesUnpublished = reviews.some((review) => unpublished.has(review.id) && quotes(review));
  return !quotesUnpublished || reviews.some((review) => !unpublished.has(review.id) && quotes(review)) ? quote : null;
}

/** An attribution after the quote: "... — Jane D." or "... - Jane". */
const ATTRIBUTION = /\s[\u2014\u2013-]\s*[^\u2014\u2013-]*$/u;
const ELLIPSIS = /\u2026|\.{3}/u;

/**
 * The runs of words a quote takes from a text, as its words alone: a quote is set off with quotation
 * marks, cut with ellipses, recased and repunctuated, and signed, so it is found by its words, in order,
 * not by its characters.
 */
function quotedFragments(quote: string): string[] {
  return quote
    .replace(ATTRIBUTION, '')
    .split(ELLIPSIS)
    .map(wordsOf)
    .filter((words) => words !== ' ');
}

/** The text's words, lower case, each followed and preceded by one space: " like this ". */
function wordsOf(text: string): string {
  const words = text.normalize('NFKC').toLowerCase().match(/[\p{L}\p{N}]+/gu);
  return words === null ? ' ' : ` ${words.join(' ')} `;
}

/** Whether each fragment is in the text, in the order given. */
function fragmentsIn(fragments: readonly string[], text: string): boolean {
  const words = wordsOf(text);
  let from = 0;
  for (const fragment of fragments) {
    const at = words.indexOf(fragment, from);
    if (at === -1) return false;
    from = at + fragment.length - 1;
  }
  return true;
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
