import type { Business, Review, ServiceRef, Technician } from '../schemas/index.js';
import type { InsightsDocument, SearchResult, SinceResult } from '../schemas/documents.js';
import type { DatasetInput } from '../schemas/input.js';
import { cursorAfter, cursorPosition, type SearchParams } from '../schemas/search.js';
import { compareNewestFirst } from '../order.js';
import { firstPosition, lowerBound } from './positions.js';
import { foldForSearch } from './fold.js';
import { buildTextIndexData, createTextIndex, type TextIndexData } from './text-index.js';

/** Read-side queries over one dataset version; indexes are built once in `createSearchEngine`. */
export interface SearchEngine {
  search(params: SearchParams): SearchResult;
  since(date: string): SinceResult;
  review(id: string): Review | undefined;
  /** Staff member by name or alias, case-insensitive. */
  technician(nameOrAlias: string): Technician | undefined;
  /** Service by id or label, case-insensitive. */
  service(idOrLabel: string): ServiceRef | undefined;
}

/**
 * A filter as both its matches (positions ascending = newest first) and a membership byte per
 * position. The filter with the fewest matches in the date range drives the search; the others
 * are tested by one array read each.
 */
interface PositionFilter {
  readonly positions: Int32Array;
  /** member()[position] is 1 for a match. Built on demand for query matches, which usually drive. */
  member(): Uint8Array;
}

function membership(positions: Int32Array, count: number): Uint8Array {
  const member = new Uint8Array(count);
  for (const position of positions) member[position] = 1;
  return member;
}

/** An index filter as data: its matches and membership bytes, built once per snapshot. */
interface StoredFilter {
  readonly positions: Int32Array;
  readonly member: Uint8Array;
}

function storedFilter({ positions, member }: StoredFilter): PositionFilter {
  return { positions, member: () => member };
}

/** The part of a filter's positions inside the date range [from, to): indexes [start, end). */
function inRange(filter: PositionFilter, from: number, to: number) {
  return { filter, start: lowerBound(filter.positions, from), end: lowerBound(filter.positions, to) };
}

/** Below this many candidates, testing each text beats computing (or recalling) all matches of a query. */
const TEST_QUERY_BELOW = 1000;

/**
 * Every index of an engine, as typed arrays in plain objects and Maps: the costly part of a
 * snapshot's search, built where the snapshot is built (a worker thread) and moved to the thread
 * that searches.
 */
export interface SearchIndexData {
  readonly text: TextIndexData;
  /** exactRating[k - 1]: reviews rated k; atLeastRating[k - 1]: reviews rated k or more. */
  readonly exactRating: readonly StoredFilter[];
  readonly atLeastRating: readonly StoredFilter[];
  /** By technician name / service id. */
  readonly technicians: ReadonlyMap<string, StoredFilter>;
  readonly services: ReadonlyMap<string, StoredFilter>;
}

const searchedTexts = (reviews: readonly Review[]) => reviews.map((review) => review.text ?? '');

export function buildSearchIndex(reviewsNewestFirst: readonly Review[], business: Business, insights: InsightsDocument): SearchIndexData {
  const reviews = reviewsNewestFirst;
  const count = reviews.length;
  const perReview = insights.per_review;
  const filterWhere = (has: (position: number) => boolean): StoredFilter => {
    const positions = positionsWhere(count, has);
    return { positions, member: membership(positions, count) };
  };
  const mentionFilters = (keys: readonly string[], mentionsOf: (review: Review) => readonly string[]): Map<string, StoredFilter> => {
    const members = new Map(keys.map((key) => [key, new Uint8Array(count)]));
    reviews.forEach((review, position) => {
      for (const key of mentionsOf(review)) {
        const member = members.get(key);
        if (member) member[position] = 1;
      }
    });
    return new Map([...members].map(([key, member]) => [key, { positions: positionsWhere(count, (p) => member[p] === 1), member }]));
  };
  const ratings = Uint8Array.from(reviews, (review) => review.rating);
  return {
    text: buildTextIndexData(searchedTexts(reviews)),
    exactRating: [1, 2, 3, 4, 5].map((stars) => filterWhere((p) => ratings[p] === stars)),
    atLeastRating: [1, 2, 3, 4, 5].map((stars) => filterWhere((p) => (ratings[p] as number) >= stars)),
    technicians: mentionFilters(
      business.technicians.map((t) => t.name),
      (review) => perReview[review.id]?.technicians ?? [],
    ),
    services: mentionFilters(
      business.services.map((s) => s.id),
      (review) => perReview[review.id]?.services ?? [],
    ),
  };
}

/**
 * Positions are indexes into the newest-first review array, so every position list is sorted
 * newest first, a date range is one contiguous slice, and results need no sorting per request.
 * With `index` built elsewhere, opening the engine only wraps it (and lower-cases the texts).
 */
export function createSearchEngine(
  _input: DatasetInput,
  reviewsNewestFirst: readonly Review[],
  business: Business,
  insights: InsightsDocument,
  index: SearchIndexData = buildSearchIndex(reviewsNewestFirst, business, insights),
): SearchEngine {
  const reviews = reviewsNewestFirst;
  const count = reviews.length;
  /** Built on the first lookup by id (MCP get_review), not with every snapshot. */
  let byId: Map<string, Review> | undefined;

  const exactRating = index.exactRating.map(storedFilter);
  const atLeastRating = index.atLeastRating.map(storedFilter);
  const technicianFilters = new Map([...index.technicians].map(([key, filter]) => [key, storedFilter(filter)]));
  const serviceFilters = new Map([...index.services].map(([key, filter]) => [key, storedFilter(filter)]));
  const technicianByKey = lookupTable(business.technicians, (t) => [t.name, ...t.aliases]);
  const serviceByKey = lookupTable(business.services, (s) => [s.id, s.label]);

  const text = createTextIndex(searchedTexts(reviews), index.text);

  /** Position range [from, to) of reviews dated within [since, until]. */
  function dateRange(since: string | undefined, until: string | undefined): [number, number] {
    const from = until === undefined ? 0 : firstPosition(count, (p) => (reviews[p] as Review).date <= until);
    const to = since === undefined ? count : firstPosition(count, (p) => (reviews[p] as Review).date < since);
    return [from, Math.max(from, to)];
  }

  /** The non-text filters of `params`; `undefined` when a named staff member or service does not exist. */
  function indexedFilters(params: SearchParams): PositionFilter[] | undefined {
    const filters: PositionFilter[] = [];
    if (params.rating !== undefined) filters.push(exactRating[params.rating - 1] as PositionFilter);
    if (params.min_rating !== undefined) filters.push(atLeastRating[Math.ceil(params.min_rating) - 1] as PositionFilter);
    if (params.mentions_technician !== undefined) {
      const technician = technicianByKey.get(foldForSearch(params.mentions_technician));
      if (!technician) return undefined;
      filters.push(technicianFilters.get(technician.name) as PositionFilter);
    }
    if (params.mentions_service !== undefined) {
      const service = serviceByKey.get(foldForSearch(params.mentions_service));
      if (!service) return undefined;
      filters.push(serviceFilters.get(service.id) as PositionFilter);
    }
    return filters;
  }

  function search(params: SearchParams): SearchResult {
    const filters = indexedFilters(params);
    if (!filters) return page(0, [], false);
    const [from, to] = dateRange(params.since, params.until);
    const ranged = filters.map((filter) => inRange(filter, from, to));
    /** Set when the query is checked one text at a time instead of through all its matches. */
    let testQuery: string | undefined;
    if (params.query !== undefined) {
      const query = foldForSearch(params.query);
      // A handful of candidates (date range or another filter) is cheaper to test one by one than finding every text match.
      if (to - from <= TEST_QUERY_BELOW || ranged.some((r) => r.end - r.start <= TEST_QUERY_BELOW)) {
        testQuery = query;
      } else {
        // Other filters or a date range narrow the search: the query's trigram candidates take part
        // like any filter, and only the texts every filter keeps are read to confirm the query.
        const candidates = ranged.length > 0 || to - from < count ? text.candidates(query) : null;
        const positions = candidates ? candidates.positions : text.matches(query);
        ranged.push(inRange({ positions, member: () => membership(positions, count) }, from, to));
        if (candidates && !candidates.confirmed) testQuery = query;
      }
    }
    ranged.sort((a, b) => a.end - a.start - (b.end - b.start));
    const [driver, ...others] = ranged;
    const members = others.map(({ filter }) => filter.member());
    const positions = driver?.filter.positions;
    const [start, end] = driver ? [driver.start, driver.end] : [from, to];

    // Matches before the cursor still count in `matched`; the page starts at the first one after it.
    const after = params.cursor === undefined ? 0 : positionAfter(params.cursor);
    const found: Review[] = [];
    if (members.length === 0 && testQuery === undefined) {
      // Every candidate matches: the count is the width of the slice, only `limit` reviews are touched.
      const first = Math.max(start, positions ? lowerBound(positions, after) : after);
      const last = Math.min(end, first + params.limit);
      for (let i = first; i < last; i++) found.push(reviews[positions ? (positions[i] as number) : i] as Review);
      return page(end - start, found, last < end);
    }
    let matched = 0;
    let more = false;
    next: for (let i = start; i < end; i++) {
      const position = positions ? (positions[i] as number) : i;
      for (const member of members) if (member[position] !== 1) continue next;
      if (testQuery !== undefined && !text.contains(position, testQuery)) continue;
      matched += 1;
      if (position < after) continue;
      if (found.length < params.limit) found.push(reviews[position] as Review);
      else more = true;
    }
    return page(matched, found, more);
  }

  /** The first position after a cursor's review in the newest-first order, whether that review is still there or not. */
  function positionAfter(cursor: string): number {
    const boundary = cursorPosition(cursor);
    return firstPosition(count, (p) => compareNewestFirst(reviews[p] as Review, boundary) > 0);
  }

  return {
    search,
    since(date) {
      const [from, to] = dateRange(date, undefined);
      return { since: date, matched: to - from, reviews: reviews.slice(from, to) };
    },
    review: (id) => (byId ??= new Map(reviews.map((review) => [review.id, review]))).get(id),
    technician: (nameOrAlias) => technicianByKey.get(foldForSearch(nameOrAlias)),
    service: (idOrLabel) => serviceByKey.get(foldForSearch(idOrLabel)),
  };
}

/** A page of results; `more` when matches follow its last review. */
function page(matched: number, found: Review[], more: boolean): SearchResult {
  const last = found[found.length - 1];
  return { matched, returned: found.length, reviews: found, next_cursor: more && last !== undefined ? cursorAfter(last) : null };
}

/** Case-insensitive lookup by every key of an item; the first item wins a clash (validation rejects clashes). */
function lookupTable<T>(items: readonly T[], keysOf: (item: T) => readonly string[]): Map<string, T> {
  const table = new Map<string, T>();
  for (const item of items) {
    for (const key of keysOf(item)) {
      const folded = foldForSearch(key);
      if (!table.has(folded)) table.set(folded, item);
    }
  }
  return table;
}

function positionsWhere(count: number, predicate: (position: number) => boolean): Int32Array {
  const positions: number[] = [];
  for (let p = 0; p < count; p++) if (predicate(p)) positions.push(p);
  return Int32Array.from(positions);
}

