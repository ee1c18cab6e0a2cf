import type { Business, Review, ServiceRef, Technician } from '../schemas/index.js';
import type { InsightsDocument, SearchResult, SinceResult } from '../schemas/documents.js';
import type { DatasetInput } from '../schemas/input.js';
import type { SearchParams } from '../schemas/search.js';
import { createTextIndex } from './text-index.js';

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
 * A filter that can both enumerate its matches (positions ascending = newest first) and test one
 * position in O(1). The smallest one drives the search; the others only test.
 */
interface PositionFilter {
  readonly positions: Int32Array;
  has(position: number): boolean;
}

/**
 * Positions are indexes into the newest-first review array, so every position list is sorted
 * newest first, a date range is one contiguous slice, and results need no sorting per request.
 */
export function createSearchEngine(_input: DatasetInput, reviewsNewestFirst: readonly Review[], business: Business, insights: InsightsDocument): SearchEngine {
  const reviews = reviewsNewestFirst;
  const count = reviews.length;
  const perReview = insights.per_review;
  const byId = new Map(reviews.map((review) => [review.id, review]));

  const ratings = Uint8Array.from(reviews, (review) => review.rating);
  /** atLeast[k]: positions of reviews rated k or more (k = 1..5); ratingFilters[k]: rated exactly k. */
  const ratingFilters = [1, 2, 3, 4, 5].map((stars) => ({ positions: positionsWhere(count, (p) => ratings[p] === stars), has: (p: number) => ratings[p] === stars }));
  const atLeastFilters = [1, 2, 3, 4, 5].map((stars) => ({ positions: positionsWhere(count, (p) => (ratings[p] as number) >= stars), has: (p: number) => (ratings[p] as number) >= stars }));

  const technicianByKey = lookupTable(business.technicians, (t) => [t.name, ...t.aliases]);
  const serviceByKey = lookupTable(business.services, (s) => [s.id, s.label]);
  const technicianFilters = mentionFilters(business.technicians.map((t) => t.name), (review) => perReview[review.id]?.technicians ?? []);
  const serviceFilters = mentionFilters(business.services.map((s) => s.id), (review) => perReview[review.id]?.services ?? []);

  const text = createTextIndex(reviews.map((review) => review.text ?? ''));

  function mentionFilters(keys: readonly string[], mentionsOf: (review: Review) => readonly string[]): Map<string, PositionFilter> {
    const members = new Map(keys.map((key) => [key, new Uint8Array(count)]));
    reviews.forEach((review, position) => {
      for (const key of mentionsOf(review)) {
        const member = members.get(key);
        if (member) member[position] = 1;
      }
    });
    return new Map(
      [...members].map(([key, member]) => [key, { positions: positionsWhere(count, (p) => member[p] === 1), has: (p: number) => member[p] === 1 }]),
    );
  }

  /** Position range [from, to) of reviews dated within [since, until]. */
  function dateRange(since: string | undefined, until: string | undefined): [number, number] {
    const from = until === undefined ? 0 : firstPosition(count, (p) => (reviews[p] as Review).date <= until);
    const to = since === undefined ? count : firstPosition(count, (p) => (reviews[p] as Review).date < since);
    return [from, Math.max(from, to)];
  }

  function search(params: SearchParams): SearchResult {
    const filters: PositionFilter[] = [];
    if (params.rating !== undefined) filters.push(ratingFilters[params.rating - 1] as PositionFilter);
    if (params.min_rating !== undefined) filters.push(atLeastFilters[Math.ceil(params.min_rating) - 1] as PositionFilter);
    if (params.mentions_technician !== undefined) {
      const technician = technicianByKey.get(params.mentions_technician.toLowerCase());
      const filter = technician && technicianFilters.get(technician.name);
      if (!filter) return { matched: 0, returned: 0, reviews: [] };
      filters.push(filter);
    }
    if (params.mentions_service !== undefined) {
      const service = serviceByKey.get(params.mentions_service.toLowerCase());
      const filter = service && serviceFilters.get(service.id);
      if (!filter) return { matched: 0, returned: 0, reviews: [] };
      filters.push(filter);
    }
    const [from, to] = dateRange(params.since, params.until);
    const limit = params.limit;
    const found: Review[] = [];
    let matched = 0;
    const accept = (position: number) => {
      matched += 1;
      if (found.length < limit) found.push(reviews[position] as Review);
    };

    const query = params.query?.toLowerCase();
    const ranged = filters.map((filter) => ({ filter, start: lowerBound(filter.positions, from), end: lowerBound(filter.positions, to) }));
    ranged.sort((a, b) => a.end - a.start - (b.end - b.start));
    const [driver, ...checks] = ranged;

    if (!driver) {
      if (query === undefined) {
        for (let p = from; p < Math.min(to, from + limit); p++) found.push(reviews[p] as Review);
        return { matched: to - from, returned: found.length, reviews: found };
      }
      text.forEachMatch(query, from, to, accept);
    } else if (checks.length === 0 && query === undefined) {
      // One filter: the count is the width of its slice, no position needs testing.
      for (let i = driver.start; i < Math.min(driver.end, driver.start + limit); i++) found.push(reviews[driver.filter.positions[i] as number] as Review);
      return { matched: driver.end - driver.start, returned: found.length, reviews: found };
    } else if (query !== undefined && text.prefersScan(driver.end - driver.start, to - from)) {
      text.forEachMatch(query, from, to, (p) => {
        if (driver.filter.has(p) && checks.every(({ filter }) => filter.has(p))) accept(p);
      });
    } else {
      const positions = driver.filter.positions;
      for (let i = driver.start; i < driver.end; i++) {
        const p = positions[i] as number;
        if (checks.every(({ filter }) => filter.has(p)) && (query === undefined || text.contains(p, query))) accept(p);
      }
    }
    return { matched, returned: found.length, reviews: found };
  }

  return {
    search,
    since(date) {
      const [from, to] = dateRange(date, undefined);
      return { since: date, matched: to - from, reviews: reviews.slice(from, to) };
    },
    review: (id) => byId.get(id),
    technician: (nameOrAlias) => technicianByKey.get(nameOrAlias.toLowerCase()),
    service: (idOrLabel) => serviceByKey.get(idOrLabel.toLowerCase()),
  };
}

/** Case-insensitive lookup by every key of an item; the first item wins a clash (validation rejects clashes). */
function lookupTable<T>(items: readonly T[], keysOf: (item: T) => readonly string[]): Map<string, T> {
  const table = new Map<string, T>();
  for (const item of items) {
    for (const key of keysOf(item)) {
      const lower = key.toLowerCase();
      if (!table.has(lower)) table.set(lower, item);
    }
  }
  return table;
}

function positionsWhere(count: number, predicate: (position: number) => boolean): Int32Array {
  const positions: number[] = [];
  for (let p = 0; p < count; p++) if (predicate(p)) positions.push(p);
  return Int32Array.from(positions);
}

/** Smallest position in [0, count) where the monotone `predicate` turns true; `count` if it never does. */
function firstPosition(count: number, predicate: (position: number) => boolean): number {
  let low = 0;
  let high = count;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (predicate(mid)) high = mid;
    else low = mid + 1;
  }
  return low;
}

/** Index of the first element of the ascending `positions` that is >= `position`. */
function lowerBound(positions: Int32Array, position: number): number {
  return firstPosition(positions.length, (i) => (positions[i] as number) >= position);
}
