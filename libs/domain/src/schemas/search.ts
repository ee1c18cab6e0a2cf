import { z } from 'zod';
import { isCalendarDate, IsoDate } from './primitives.js';

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
};

export const SearchParams = z
  .strictObject(searchParamsShape)
  // Their order only means something when both are dates: an invalid one has its own issue.
  .refine((p) => p.since === undefined || p.until === undefined || !isCalendarDate(p.since) || !isCalendarDate(p.until) || p.since <= p.until, {
    path: ['until'],
    message: 'until must be on or after since',
  })
  .meta({ description: 'Filters combine with AND; results are newest first (date, then id, descending); no match is an empty list.' });
export type SearchParams = z.output<typeof SearchParams>;
export type SearchParamsInput = z.input<typeof SearchParams>;

export const SinceParams = z.strictObject({ date: IsoDate.describe('Only reviews dated on or after this day (YYYY-MM-DD, inclusive).') });
export type SinceParams = z.output<typeof SinceParams>;
