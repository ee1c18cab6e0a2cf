import type { z } from 'zod';
import { customIssue, toIssues } from './issues.js';
import { ServiceRef, Technician } from './schemas/business.js';
import type { Issue } from './schemas/documents.js';
import { DatasetInput, FaqEntry, LabelledId, PerReviewAnalysis } from './schemas/input.js';
import { IsoDateTime, Ulid } from './schemas/primitives.js';
import { Review } from './schemas/review.js';
import { sameJsonValue } from './same-json-value.js';
import { foldForSearch } from './search/fold.js';

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
 * technician/service/problem/topic references must all resolve, and no review or owner reply may be
 * dated after the day of `generated_at`. Every issue carries its path, and every issue is reported,
 * up to MAX_REPORTED_ISSUES (a publisher fixes a dataset in one round, not one error at a time): when
 * the schema fails, the integrity checks still run over the parts it accepts (see `partsOf`).
 *
 * With `before`, a review or per_review entry equal (as JSON, keys in order) to one at the same
 * place (index, key) in `before` takes that one's schema output instead of being parsed again: the
 * schema is a pure function of the value. The rest is parsed as usual; anything the shortcut does
 * not find valid is parsed whole, so issues are always those of a full parse.
 */
export function validateDataset(raw: unknown, before?: ValidatedBefore): ValidationResult {
  const values = valueFindings(raw);
  // Lists too long for the schema to make an issue of each wrong item: they alone are the report.
  if (values.crowded) return { ok: false, issues: reportable(values.issues) };
  const input = parseItemByItem(raw, before);
  if (input === null) {
    const flood = longListIssues(raw);
    if (flood.length > MAX_REPORTED_ISSUES) return { ok: false, issues: reportable(flood) };
    const parsed = DatasetInput.safeParse(raw);
    if (parsed.success) return resultOf(parsed.data, integrityIssues(values.issues, partsOfInput(parsed.data)));
    return { ok: false, issues: reportable([...toIssues(parsed.error), ...integrityIssues(values.issues, partsOf(raw))]) };
  }
  return resultOf(input, integrityIssues(values.issues, partsOfInput(input)));
}

function resultOf(input: DatasetInput, issues: Issue[]): ValidationResult {
  return issues.length === 0 ? { ok: true, input } : { ok: false, issues: reportable(issues) };
}

/**
 * Issues one validation reports at most. The schema makes an issue of every wrong value, about 1 KB
 * each with its path and message: a broken pipeline's 4 MB file of two million zeros for reviews took
 * 2.2 GB and 12 s to list, and one of 20 MB ran the publish CLI out of memory with nothing listed
 * (docs audit). A thousand is more than anyone fixes in one round.
 */
export const MAX_REPORTED_ISSUES = 1_000;

/** How many issues a validation's report stands for: past MAX_REPORTED_ISSUES its last item is the note saying where it stopped, not an issue. */
export function issueCount(issues: readonly Issue[]): string {
  if (issues.length > MAX_REPORTED_ISSUES) return `more than ${MAX_REPORTED_ISSUES.toLocaleString('en-US')} issues`;
  return issues.length === 1 ? '1 issue' : `${issues.length.toLocaleString('en-US')} issues`;
}

function reportable(issues: Issue[]): Issue[] {
  if (issues.length <= MAX_REPORTED_ISSUES) return issues;
  const most = MAX_REPORTED_ISSUES.toLocaleString('en-US');
  const stopped = customIssue([], `more than ${most} issues: validation stopped after the first ${most}; fix these and check again`);
  return [...issues.slice(0, MAX_REPORTED_ISSUES), stopped];
}

/**
 * The schema's issues about the reviews and their analyses, each parsed on its own, until there are
 * more than MAX_REPORTED_ISSUES: where these long lists hold that many wrong items, their issues are
 * the report, and the whole dataset is never run through the schema, which would make one of each.
 * (No other list may hold more than MAX_LIST_ITEMS.)
 */
function longListIssues(raw: unknown): Issue[] {
  const dataset = recordOrEmpty(raw);
  const analysis = recordOrEmpty(dataset.analysis);
  const issues: Issue[] = [];
  const add = (path: Issue['path'], schema: z.ZodType, value: unknown) => {
    const parsed = schema.safeParse(value);
    if (!parsed.success) for (const issue of toIssues(parsed.error)) issues.push({ ...issue, path: [...path, ...issue.path] });
  };
  const reviews: readonly unknown[] = Array.isArray(dataset.reviews) ? dataset.reviews : [];
  for (let index = 0; index < reviews.length && issues.length <= MAX_REPORTED_ISSUES; index++) add(['reviews', index], Review, reviews[index]);
  for (const [key, value] of Object.entries(recordOrEmpty(analysis.per_review))) {
    if (issues.length > MAX_REPORTED_ISSUES) break;
    add(['analysis', 'per_review', key], PerReviewAnalysis, value);
  }
  return issues;
}

function integrityIssues(valueIssues: readonly Issue[], parts: DatasetParts): Issue[] {
  return [...valueIssues, ...businessIssues(parts), ...reviewIssues(parts), ...analysisIssues(parts)];
}

/**
 * The dataset as the integrity checks see it: each part the schema accepts, `undefined` where it
 * refuses the part (or the list, object or value holding it). A check that needs a part skips it,
 * so no issue is reported that exists only because something failed to parse; indices and keys are
 * the dataset's own, so every path stays exact.
 */
interface DatasetParts {
  readonly generatedAt: string | undefined;
  readonly services: PartList<ServiceRef>;
  readonly technicians: PartList<Technician>;
  readonly reviews: PartList<Review>;
  /** Each review's id wherever it is a string, even in a review the schema refuses for another field. */
  readonly reviewIds: PartList<string>;
  readonly problems: PartList<LabelledId>;
  readonly topics: PartList<LabelledId>;
  readonly perReview: readonly (readonly [key: string, analysis: PerReviewAnalysis | undefined])[];
  readonly faq: PartList<FaqEntry>;
}

/** A list's items, each `undefined` where the schema refuses it; the list is `undefined` when it is not a list. */
type PartList<T> = readonly (T | undefined)[] | undefined;

/** The parts of a dataset the schema accepted as a whole. */
function partsOfInput(input: DatasetInput): DatasetParts {
  return {
    generatedAt: input.generated_at,
    services: input.business.services,
    technicians: input.business.technicians,
    reviews: input.reviews,
    reviewIds: input.reviews.map((review) => review.id),
    problems: input.analysis.taxonomy.problems,
    topics: input.analysis.taxonomy.topics,
    perReview: Object.entries(input.analysis.per_review),
    faq: input.analysis.faq,
  };
}

/** The parts of a dataset the schema refused as a whole: each part is run through the schema's own definition of it. */
function partsOf(raw: unknown): DatasetParts {
  const dataset = recordOrEmpty(raw);
  const business = recordOrEmpty(dataset.business);
  const analysis = recordOrEmpty(dataset.analysis);
  const taxonomy = recordOrEmpty(analysis.taxonomy);
  const parsed = <T>(schema: z.ZodType<T>, value: unknown): T | undefined => {
    const result = schema.safeParse(value);
    return result.success ? result.data : undefined;
  };
  const list = <T>(schema: z.ZodType<T>, value: unknown): PartList<T> => (Array.isArray(value) ? value.map((item) => parsed(schema, item)) : undefined);
  return {
    generatedAt: parsed(IsoDateTime, dataset.generated_at),
    services: list(ServiceRef, business.services),
    technicians: list(Technician, business.technicians),
    reviews: list(Review, dataset.reviews),
    reviewIds: Array.isArray(dataset.reviews) ? dataset.reviews.map((review) => (isRecord(review) && typeof review.id === 'string' ? review.id : undefined)) : undefined,
    problems: list(LabelledId, taxonomy.problems),
    topics: list(LabelledId, taxonomy.topics),
    perReview: Object.entries(recordOrEmpty(analysis.per_review)).map(([key, value]) => [key, parsed(PerReviewAnalysis, value)] as const),
    faq: list(FaqEntry, analysis.faq),
  };
}

/** A JSON object: not null, not an array. */
export const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const recordOrEmpty = (value: unknown): Record<string, unknown> => (isRecord(value) ? value : {});

/**
 * The schema's output for `raw`, its reviews and analyses parsed one at a time, skipping those
 * `before` has seen; null if anything does not parse, without listing why (validateDataset does).
 */
function parseItemByItem(raw: unknown, before: ValidatedBefore | undefined): DatasetInput | null {
  if (!isRecord(raw) || !Array.isArray(raw.reviews) || !isRecord(raw.analysis) || !isRecord(raw.analysis.per_review)) return null;
  const rawReviews: readonly unknown[] = raw.reviews;
  const rawPerReview = raw.analysis.per_review;
  const rest = DatasetInput.safeParse({ ...raw, reviews: [], analysis: { ...raw.analysis, per_review: {} } });
  if (!rest.success) return null;

  const reviews: Review[] = [];
  for (let i = 0; i < rawReviews.length; i++) {
    const seen = before !== undefined && i < before.rawReviews.length && sameJsonValue(rawReviews[i], before.rawReviews[i]) ? before.input.reviews[i] : undefined;
    if (seen !== undefined) {
      reviews.push(seen);
      continue;
    }
    const parsed = Review.safeParse(rawReviews[i]);
    if (!parsed.success) return null;
    reviews.push(parsed.data);
  }
  const perReview: Record<string, PerReviewAnalysis> = {};
  for (const key of Object.keys(rawPerReview)) {
    const seenBefore = before !== undefined && Object.hasOwn(before.rawPerReview, key) && Object.hasOwn(before.input.analysis.per_review, key) && sameJsonValue(rawPerReview[key], before.rawPerReview[key]);
    const seen = seenBefore ? before.input.analysis.per_review[key] : undefined;
    if (seen !== undefined) {
      perReview[key] = seen;
      continue;
    }
    const parsed = PerReviewAnalysis.safeParse(rawPerReview[key]);
    if (!Ulid.safeParse(key).success || !parsed.success) return null;
    perReview[key] = parsed.data;
  }
  return { ...rest.data, reviews, analysis: { ...rest.data.analysis, per_review: perReview } };
}

/** Levels of arrays and objects a dataset may nest: far beyond its deepest field (about 8). */
const MAX_NESTING = 64;

/**
 * Items one array or object may hold, but the reviews and their per_review analyses: far beyond any
 * other list a business has (services, staff, aliases, FAQ, a review's aspects). The schema makes an
 * issue of every wrong item, so a list of millions of wrong values nested in one review's analysis
 * took gigabytes to report (a review of the 1,000-issue cap).
 */
const MAX_LIST_ITEMS = 10_000;

/** The dataset's own long lists, whose items are reported one by one up to MAX_REPORTED_ISSUES (longListIssues). */
function isLongList(path: readonly (string | number)[]): boolean {
  return (path.length === 1 && path[0] === 'reviews') || (path.length === 2 && path[0] === 'analysis' && path[1] === 'per_review');
}

/** What the walk over every value found: its issues, and whether a list holds more than MAX_LIST_ITEMS. */
interface ValueFindings {
  readonly issues: Issue[];
  crowded: boolean;
}

function valueFindings(raw: unknown): ValueFindings {
  const findings: ValueFindings = { issues: [], crowded: false };
  walkValues(raw, [], findings);
  return findings;
}

/**
 * Matches a surrogate code unit without its partner (a paired one is consumed as one code point under
 * `u`), the characters XML 1.0 cannot hold: C0 controls but tab, line feed and carriage return, and
 * U+FFFE/U+FFFF; and DEL and the C1 controls, which XML holds but readers show as nothing or a box.
 */
const UNSERVABLE_CHARACTER = /\p{Surrogate}|[^\t\n\r\u0020-\u007E\u00A0-\uFFFD\u{10000}-\u{10FFFF}]/u;

/**
 * No list but the dataset's long ones may hold more than MAX_LIST_ITEMS items, and no value nest
 * deeper than MAX_NESTING. Every string must be well-formed UTF-16 (object keys are ULIDs, checked by the schema): an unpaired
 * surrogate serialises as a `\udXXX` escape that strict JSON parsers and UTF-8 encoders reject
 * (RFC 8259 §8.2), so it would make every representation of the dataset unreadable to some clients.
 * Nor may it hold a character XML cannot: the Atom feed would drop it while the JSON kept it, and an
 * author of control characters alone became an empty name that feed readers replaced with the
 * business's (feed audit).
 * It walks the parsed JSON, not the schema's output, so a string in a part the schema refuses is
 * checked too: the surrogate is wrong whatever else is. Every replica walks every string of every
 * version, so the walk allocates nothing per value: `path` is its own stack, copied only into an issue.
 */
function walkValues(value: unknown, path: (string | number)[], findings: ValueFindings): void {
  const { issues } = findings;
  // One past the most reported is enough for the report to say it stopped.
  if (issues.length > MAX_REPORTED_ISSUES) return;
  if (path.length === MAX_NESTING && value !== null && typeof value === 'object') {
    // Deeper, the walk ran out of stack (~6,000 levels, 12 KB of brackets) and crashed the checker.
    issues.push(customIssue([...path], `nests arrays and objects more than ${MAX_NESTING} levels deep; no dataset field does`));
    return;
  }
  if (typeof value === 'string') {
    const found = UNSERVABLE_CHARACTER.exec(value);
    if (found) issues.push(customIssue([...path], unservableCharacterProblem(found[0].charCodeAt(0), found.index)));
    return;
  }
  if (Array.isArray(value)) {
    if (crowded(value.length, path, findings)) return;
    for (let index = 0; index < value.length; index++) {
      path.push(index);
      walkValues(value[index], path, findings);
      path.pop();
    }
  } else if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value);
    if (crowded(keys.length, path, findings)) return;
    for (const key of keys) {
      path.push(key);
      walkValues((value as Record<string, unknown>)[key], path, findings);
      path.pop();
    }
  }
}

/** Whether the list at `path` holds more items than it may (MAX_LIST_ITEMS), reported if so. */
function crowded(size: number, path: readonly (string | number)[], findings: ValueFindings): boolean {
  if (size <= MAX_LIST_ITEMS || isLongList(path)) return false;
  findings.crowded = true;
  findings.issues.push(customIssue([...path], `holds ${size.toLocaleString('en-US')} items; no list but reviews and analysis.per_review may hold more than ${MAX_LIST_ITEMS.toLocaleString('en-US')}`));
  return true;
}

function unservableCharacterProblem(code: number, index: number): string {
  const where = `U+${code.toString(16).toUpperCase().padStart(4, '0')} at index ${index}`;
  if (code >= 0xd800 && code <= 0xdfff) return `contains an unpaired UTF-16 surrogate (${where}); text must be valid Unicode`;
  if (code === 0x0b || code === 0x0c) return `contains a ${code === 0x0b ? 'vertical tab' : 'form feed'} (${where}) that XML, and so the Atom feed, cannot hold; pasted from a word processor or a PDF, it stands for a line break: write \\n`;
  if (code < 0x20) return `contains a control character (${where}) that XML, and so the Atom feed, cannot hold; only tab, line feed and carriage return may appear`;
  if (code === 0x7f) return `contains a delete control character (${where}), which feed readers and browsers show as nothing or a box`;
  // A publisher's audit: U+0092 where ’ was meant passed, and both feeds served it.
  if (code <= 0x9f) return `contains a C1 control character (${where}), which feed readers and browsers show as nothing or a box: text read as Latin-1 that was Windows-1252 (U+0092 for ’, U+0093 and U+0094 for “ ”, U+0096 for –); decode it as Windows-1252`;
  return `contains a noncharacter (${where}) that XML, and so the Atom feed, cannot hold`;
}

/** Reports every occurrence of a key already seen, at the path `pathOf(index)`; items the schema refused are skipped. */
function duplicateIssues<T>(items: PartList<T>, keyOf: (item: T) => string[], pathOf: (index: number) => Issue['path'], what: string): Issue[] {
  const seen = new Set<string>();
  const issues: Issue[] = [];
  items?.forEach((item, index) => {
    if (item === undefined) return;
    for (const key of keyOf(item)) {
      if (seen.has(key)) issues.push(customIssue(pathOf(index), `duplicate ${what} "${key}"`));
      seen.add(key);
    }
  });
  return issues;
}

/**
 * The keys of every item of a list, or `undefined` (cannot tell) unless every item was accepted: a
 * reference is only unknown when it is not among all of them.
 */
function knownKeys<T>(items: PartList<T>, keyOf: (item: T) => string): ReadonlySet<string> | undefined {
  if (items === undefined) return undefined;
  const keys = new Set<string>();
  for (const item of items) {
    if (item === undefined) return undefined;
    keys.add(keyOf(item));
  }
  return keys;
}

/**
 * Ids and labels share one case-insensitive namespace (compared as foldForSearch compares them), as
 * `mentions_service` and `get_service` look them up: a label that is another service's id made them answer for the wrong service.
 */
function serviceNameIssues(services: DatasetParts['services']): Issue[] {
  const owners = new Map<string, number>();
  const issues: Issue[] = [];
  services?.forEach((service, index) => {
    if (service === undefined) return;
    for (const field of ['id', 'label'] as const) {
      const key = foldForSearch(service[field]);
      const owner = owners.get(key);
      if (owner === undefined) owners.set(key, index);
      else if (owner !== index) issues.push(customIssue(['business', 'services', index, field], `service ${field} "${service[field]}" already names another service (ids and labels are looked up together, case-insensitive)`));
    }
  });
  return issues;
}

function businessIssues({ services, technicians }: DatasetParts): Issue[] {
  return [
    ...serviceNameIssues(services),
    // Names and aliases share one case-insensitive namespace: `mentions_technician=<x>` must name one person.
    ...duplicateIssues(
      technicians,
      (t) => [...new Set([t.name, ...t.aliases].map(foldForSearch))],
      (i) => ['business', 'technicians', i],
      'staff name or alias (case-insensitive)',
    ),
  ];
}

function reviewIssues({ generatedAt, reviews, reviewIds }: DatasetParts): Issue[] {
  const issues = duplicateIssues(reviewIds, (id) => [id], (i) => ['reviews', i, 'id'], 'review id');
  // The day the dataset was generated, as its own offset writes it: nothing in it can be dated later.
  const generatedOn = generatedAt?.slice(0, 'YYYY-MM-DD'.length);
  const future = (path: Issue['path'], date: string, what: string) => {
    if (generatedOn !== undefined && date > generatedOn) issues.push(customIssue(path, `${what} dated ${date}, after the dataset was generated (generated_at ${generatedAt})`));
  };
  reviews?.forEach((review, i) => {
    if (review === undefined) return;
    future(['reviews', i, 'date'], review.date, 'review');
    if (!review.owner_reply) return;
    future(['reviews', i, 'owner_reply', 'date'], review.owner_reply.date, 'owner reply');
    if (review.owner_reply.date < review.date) {
      issues.push(customIssue(['reviews', i, 'owner_reply', 'date'], `owner reply dated ${review.owner_reply.date} precedes the review (${review.date})`));
    }
  });
  return issues;
}

function analysisIssues({ services, technicians, reviewIds, problems, topics, perReview, faq }: DatasetParts): Issue[] {
  const knownReviewIds = knownKeys(reviewIds, (id) => id);
  const technicianNames = knownKeys(technicians, (t) => t.name);
  const serviceIds = knownKeys(services, (s) => s.id);
  const problemIds = knownKeys(problems, (p) => p.id);
  const topicIds = knownKeys(topics, (t) => t.id);
  const issues: Issue[] = [
    ...duplicateIssues(problems, (p) => [p.id], (i) => ['analysis', 'taxonomy', 'problems', i, 'id'], 'problem id'),
    ...duplicateIssues(topics, (t) => [t.id], (i) => ['analysis', 'taxonomy', 'topics', i, 'id'], 'topic id'),
  ];

  // `known` is undefined when some of what a reference may name was refused by the schema: nothing to say then.
  const references = (base: Issue['path'], values: readonly string[], known: ReadonlySet<string> | undefined, what: string) =>
    values.forEach((value, j) => {
      if (known && !known.has(value)) issues.push(customIssue([...base, j], `unknown ${what} "${value}"`));
    });

  for (const [id, analysed] of perReview) {
    const base = ['analysis', 'per_review', id];
    if (knownReviewIds && !knownReviewIds.has(id)) issues.push(customIssue(base, `per_review key "${id}" is not the id of a review`));
    if (analysed === undefined) continue;
    // mention_count counts reviews, so one review may mention an aspect only once.
    issues.push(...duplicateIssues(analysed.aspects, (a) => [a.id], (j) => [...base, 'aspects', j, 'id'], 'aspect'));
    references([...base, 'technicians'], analysed.technicians, technicianNames, 'staff name (use the canonical business.technicians name)');
    references([...base, 'services'], analysed.services, serviceIds, 'service id');
    references([...base, 'problems'], analysed.problems, problemIds, 'problem id (not in analysis.taxonomy.problems)');
    references([...base, 'topics'], analysed.topics, topicIds, 'topic id (not in analysis.taxonomy.topics)');
  }
  faq?.forEach((entry, i) => {
    if (entry !== undefined) references(['analysis', 'faq', i, 'source_review_ids'], entry.source_review_ids, knownReviewIds, 'review id');
  });
  return issues;
}
