import { customIssue, toIssues } from './issues.js';
import type { Issue } from './schemas/documents.js';
import { DatasetInput, PerReviewAnalysis } from './schemas/input.js';
import { Ulid } from './schemas/primitives.js';
import { Review } from './schemas/review.js';
import { sameJsonValue } from './same-json-value.js';

export type ValidationResult = { ok: true; input: DatasetInput } | { ok: false; issues: Issue[] };

/**
 * A dataset that validated before: its parsed JSON's reviews and per_review entries, and the input
 * the schema made of them. A long-lived build worker keeps the last one, so the reviews a new
 * version repeats are not run through the schema again (most of validation's time).
 */
export interface ValidatedBefore {
  readonly rawReviews: readonly unknown[];
  readonly rawPerReview: Readonly<Record<string, unknown>>;
  readonly input: DatasetInput;
}

/**
 * Schema validation plus referential integrity: duplicate review ids, per_review keys, FAQ sources,
 * technician/service/problem/topic references must all resolve. Every issue carries its path, and
 * every issue is reported (a publisher fixes a dataset in one round, not one error at a time).
 *
 * With `before`, a review or per_review entry equal (as JSON, keys in order) to one at the same
 * place (index, key) in `before` takes that one's schema output instead of being parsed again: the
 * schema is a pure function of the value. The rest is parsed as usual; anything the shortcut does
 * not find valid is parsed whole, so issues are always those of a full parse.
 */
export function validateDataset(raw: unknown, before?: ValidatedBefore): ValidationResult {
  let input = before ? parseReusing(raw, before) : null;
  if (input === null) {
    const parsed = DatasetInput.safeParse(raw);
    if (!parsed.success) return { ok: false, issues: toIssues(parsed.error) };
    input = parsed.data;
  }
  const issues = [...textIssues(input), ...businessIssues(input), ...reviewIssues(input), ...analysisIssues(input)];
  return issues.length === 0 ? { ok: true, input } : { ok: false, issues };
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The schema's output for `raw`, parsing only the reviews and analyses `before` has not seen; null if anything does not parse. */
function parseReusing(raw: unknown, before: ValidatedBefore): DatasetInput | null {
  if (!isRecord(raw) || !Array.isArray(raw.reviews) || !isRecord(raw.analysis) || !isRecord(raw.analysis.per_review)) return null;
  const rawReviews: readonly unknown[] = raw.reviews;
  const rawPerReview = raw.analysis.per_review;
  const rest = DatasetInput.safeParse({ ...raw, reviews: [], analysis: { ...raw.analysis, per_review: {} } });
  if (!rest.success) return null;

  const reviews: Review[] = [];
  for (let i = 0; i < rawReviews.length; i++) {
    const seen = before.input.reviews[i];
    if (seen !== undefined && i < before.rawReviews.length && sameJsonValue(rawReviews[i], before.rawReviews[i])) {
      reviews.push(seen);
      continue;
    }
    const parsed = Review.safeParse(rawReviews[i]);
    if (!parsed.success) return null;
    reviews.push(parsed.data);
  }
  const perReview: Record<string, PerReviewAnalysis> = {};
  for (const key of Object.keys(rawPerReview)) {
    const seen = Object.hasOwn(before.input.analysis.per_review, key) ? before.input.analysis.per_review[key] : undefined;
    if (seen !== undefined && Object.hasOwn(before.rawPerReview, key) && sameJsonValue(rawPerReview[key], before.rawPerReview[key])) {
      perReview[key] = seen;
      continue;
    }
    const parsed = PerReviewAnalysis.safeParse(rawPerReview[key]);
    if (!Ulid.safeParse(key).success || !parsed.success) return null;
    perReview[key] = parsed.data;
  }
  return { ...rest.data, reviews, analysis: { ...rest.data.analysis, per_review: perReview } };
}

/** Matches only a surrogate code unit without its partner (a paired one is consumed as one code point under `u`). */
const UNPAIRED_SURROGATE = /\p{Surrogate}/u;

/**
 * Every string must be well-formed UTF-16 (object keys are ULIDs, checked by the schema): an unpaired
 * surrogate serialises as a `\udXXX` escape that strict JSON parsers and UTF-8 encoders reject
 * (RFC 8259 §8.2), so it would make every representation of the dataset unreadable to some clients.
 * Every replica walks every string of every version, so the walk allocates nothing per value: `path`
 * is its own stack, copied only into an issue.
 */
function textIssues(value: unknown, path: (string | number)[] = [], issues: Issue[] = []): Issue[] {
  if (typeof value === 'string') {
    const unit = UNPAIRED_SURROGATE.exec(value);
    if (unit) {
      const hex = unit[0].charCodeAt(0).toString(16).toUpperCase();
      issues.push(customIssue([...path], `contains an unpaired UTF-16 surrogate (U+${hex} at index ${unit.index}); text must be valid Unicode`));
    }
  } else if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      path.push(index);
      textIssues(value[index], path, issues);
      path.pop();
    }
  } else if (value !== null && typeof value === 'object') {
    for (const key of Object.keys(value)) {
      path.push(key);
      textIssues((value as Record<string, unknown>)[key], path, issues);
      path.pop();
    }
  }
  return issues;
}

/** Reports every occurrence of a key already seen, at the path `pathOf(index)`. */
function duplicateIssues<T>(items: readonly T[], keyOf: (item: T) => string[], pathOf: (index: number) => Issue['path'], what: string): Issue[] {
  const seen = new Set<string>();
  const issues: Issue[] = [];
  items.forEach((item, index) => {
    for (const key of keyOf(item)) {
      if (seen.has(key)) issues.push(customIssue(pathOf(index), `duplicate ${what} "${key}"`));
      seen.add(key);
    }
  });
  return issues;
}

function businessIssues({ business }: DatasetInput): Issue[] {
  return [
    ...duplicateIssues(business.services, (s) => [s.id], (i) => ['business', 'services', i, 'id'], 'service id'),
    ...duplicateIssues(business.services, (s) => [s.label.toLowerCase()], (i) => ['business', 'services', i, 'label'], 'service label (case-insensitive)'),
    // Names and aliases share one case-insensitive namespace: `mentions_technician=<x>` must name one person.
    ...duplicateIssues(
      business.technicians,
      (t) => [...new Set([t.name, ...t.aliases].map((name) => name.toLowerCase()))],
      (i) => ['business', 'technicians', i],
      'staff name or alias (case-insensitive)',
    ),
  ];
}

function reviewIssues({ reviews }: DatasetInput): Issue[] {
  const issues = duplicateIssues(reviews, (r) => [r.id], (i) => ['reviews', i, 'id'], 'review id');
  reviews.forEach((review, i) => {
    if (review.owner_reply && review.owner_reply.date < review.date) {
      issues.push(customIssue(['reviews', i, 'owner_reply', 'date'], `owner reply dated ${review.owner_reply.date} precedes the review (${review.date})`));
    }
  });
  return issues;
}

function analysisIssues({ business, reviews, analysis }: DatasetInput): Issue[] {
  const reviewIds = new Set(reviews.map((r) => r.id));
  const technicianNames = new Set(business.technicians.map((t) => t.name));
  const serviceIds = new Set(business.services.map((s) => s.id));
  const problemIds = new Set(analysis.taxonomy.problems.map((p) => p.id));
  const topicIds = new Set(analysis.taxonomy.topics.map((t) => t.id));
  const issues: Issue[] = [
    ...duplicateIssues(analysis.taxonomy.problems, (p) => [p.id], (i) => ['analysis', 'taxonomy', 'problems', i, 'id'], 'problem id'),
    ...duplicateIssues(analysis.taxonomy.topics, (t) => [t.id], (i) => ['analysis', 'taxonomy', 'topics', i, 'id'], 'topic id'),
  ];

  const references = (base: Issue['path'], values: readonly string[], known: ReadonlySet<string>, what: string) =>
    values.forEach((value, j) => {
      if (!known.has(value)) issues.push(customIssue([...base, j], `unknown ${what} "${value}"`));
    });

  for (const [id, analysed] of Object.entries(analysis.per_review)) {
    const base = ['analysis', 'per_review', id];
    if (!reviewIds.has(id)) issues.push(customIssue(base, `per_review key "${id}" is not the id of a review`));
    // mention_count counts reviews, so one review may mention an aspect only once.
    issues.push(...duplicateIssues(analysed.aspects, (a) => [a.id], (j) => [...base, 'aspects', j, 'id'], 'aspect'));
    references([...base, 'technicians'], analysed.technicians, technicianNames, 'staff name (use the canonical business.technicians name)');
    references([...base, 'services'], analysed.services, serviceIds, 'service id');
    references([...base, 'problems'], analysed.problems, problemIds, 'problem id (not in analysis.taxonomy.problems)');
    references([...base, 'topics'], analysed.topics, topicIds, 'topic id (not in analysis.taxonomy.topics)');
  }
  analysis.faq.forEach((entry, i) => references(['analysis', 'faq', i, 'source_review_ids'], entry.source_review_ids, reviewIds, 'review id'));
  return issues;
}
