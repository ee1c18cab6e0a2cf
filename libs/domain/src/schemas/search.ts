import { z } from 'zod';
import type { Review } from './review.js';
import { isCalendarDate, IsoDate, ULID_CHARACTERS } from './primitives.js';

const NOT_A_CURSOR = 'must be the next_cursor of an earlier search (YYYY-MM-DD~<review id>)';
const CURSOR_PATTERN = new RegExp(`^\\d{4}-\\d{2}-\\d{2}~${ULID_CHARACTERS}$`);

/**
 * Where a page of search results ended: the date and id of its last review. The next page holds the
 * matches after it in the results' order (newest first: date, then id, descending). A position, not an
 * offset, so reviews published or removed meanwhile neither repeat nor skip a match, and it holds across
 * dataset versions.
 */
export function cursorAfter(review: Pick<Review, 'date' | 'id'>): string {
  return `${review.date}~${review.id}`;
}

/** The date and id a cursor `cursorAfter` made (and SearchCursor accepted) names. */
export function cursorPosition(cursor: string): Pick<Review, 'date' | 'id'> {
  return { date: cursor.slice(0, 10), id: cursor.slice(11) };
}

export const SearchCursor = z
  .string()
  .regex(CURSOR_PATTERN, NOT_A_CURSOR)
  // One issue per bad cursor: the date is checked only in one the pattern took.
  .refine((cursor) => !CURSOR_PATTERN.test(cursor) || isCalendarDate(cursorPosition(cursor).date), NOT_A_CURSOR)
  .meta({ description: 'A page boundary: the `next_cursor` of an earlier search, the date and id of the last review it returned.', examples: ['2025-06-30~01HZX3K9QW8E5R7T2Y4V6J8M0P'] });

/**
 * The search parameters, shared verbatim by GET /api/reviews/search, the MCP `search_reviews`
 * tool and the OpenAPI document, so the three cannot drift.
 */
export const searchParamsShape = {
  rating: z.int().min(1).max(5).optional().describe('Exact star rating to match (integer 1-5).'),
  min_rating: z.number().min(1).max(5).optional().describe('Minimum star rating, inclusive (number 1-5).'),
  since: IsoDate.optional().describe('Only reviews dated on or after this day (YYYY-MM-DD, inclusive).'),
  until: IsoDate.optional().describe('Only reviews dated on or before this day (YYYY-MM-DD, inclusive).'),
  query: z.string().min(1).max(200).optional().describe('Case-insensitive substring of the review text. Rating-only reviews (no text) never match.'),
  mentions_technician: z
    .string()
    .min(1)
    .max(100)
    .optional()
    .describe('Only reviews mentioning this staff member, by full name or alias, case-insensitive (e.g. a first name).'),
  mentions_service: z.string().min(1).max(100).optional().describe('Only reviews mentioning this service, by id (e.g. direct-cremation) or label, case-insensitive.'),
  limit: z.int().min(1).max(100).default(20).describe('Maximum number of reviews returned (1-100, default 20).'),
  cursor: SearchCursor.optional().describe(
    'Continue after this `next_cursor` of an earlier search with the same filters: the next `limit` matches, newest first. Omit it for the first page; a `next_cursor` of null means there is no next one.',
  ),
};

export const SearchParams = z
  .strictObject(searchParamsShape)
  // Their order only means something when both are dates: an invalid one has its own issue.
  .refine((p) => p.since === undefined || p.until === undefined || !isCalendarDate(p.since) || !isCalendarDate(p.until) || p.since <= p.until, {
    path: ['until'],
    message: 'until must be on or after since',
  })
  .meta({ description: 'Filters combine with AND; results are newest first (date, then id, descending); no match is an empty list. Pages of `limit`: send `next_cursor` back as `cursor` for the next.' });
export type SearchParams = z.output<typeof SearchParams>;
export type SearchParamsInput = z.input<typeof SearchParams>;

export const SinceParams = z.strictObject({ date: IsoDate.describe('Only reviews dated on or after this day (YYYY-MM-DD, inclusive).') });
export type SinceParams = z.output<typeof SinceParams>;
