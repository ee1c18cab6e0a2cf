import { customIssue, toIssues } from '../issues.js';
import type { Issue } from '../schemas/documents.js';
import { SearchParams, searchParamsShape, SinceParams } from '../schemas/search.js';

/** A query string's parameters (groupQueryString): every value of a name, so a repeated name can be refused; a single value may be given bare. */
export type RawQuery = Record<string, string | string[] | undefined>;

/** A request's query string (after its `?`) -> each name with all its values, in order. */
export function groupQueryString(query: string): RawQuery {
  const grouped: Record<string, string[]> = Object.create(null) as Record<string, string[]>;
  // URLSearchParams drops a leading "?" as the query's own delimiter; this query was split off after
  // its delimiter, so a "?" still at its start belongs to the first name (`??rating=5` names "?rating").
  // A leading "&" adds only an empty pair, which URLSearchParams skips.
  for (const [name, value] of new URLSearchParams(query.startsWith('?') ? `&${query}` : query)) (grouped[name] ??= []).push(value);
  return grouped;
}

export type SearchQueryResult = { ok: true; params: SearchParams } | { ok: false; issues: Issue[] };
export type SinceDateResult = { ok: true; date: string } | { ok: false; issues: Issue[] };

/** Strictly a decimal number: "5", "-1", "4.5". Anything else ("", "5abc", "1e2", " 5") stays text and fails as "expected number". */
const NUMERIC_TEXT = /^-?\d+(\.\d+)?$/;

/** Parameters whose schema takes a number; only their text is converted, so `query=2024` stays a string. */
const NUMERIC_PARAMETERS = new Set(
  Object.entries(searchParamsShape)
    .filter(([, schema]) => schema.safeParse(1).success)
    .map(([name]) => name),
);

/**
 * GET /api/reviews/search query string -> validated `SearchParams`, or every issue found: each
 * repeated parameter, each unknown one, each bad value (zod's own issues, with their paths).
 */
export function parseSearchQuery(query: RawQuery): SearchQueryResult {
  const issues: Issue[] = [];
  const entries: [string, string | number][] = [];
  for (const [name, raw] of Object.entries(query)) {
    if (raw === undefined || (Array.isArray(raw) && raw.length === 0)) continue;
    if (Array.isArray(raw) && raw.length > 1) {
      issues.push(customIssue([name], 'must be given at most once'));
      continue;
    }
    const text = Array.isArray(raw) ? (raw[0] as string) : raw;
    entries.push([name, NUMERIC_PARAMETERS.has(name) && NUMERIC_TEXT.test(text) ? Number(text) : text]);
  }
  // fromEntries defines own properties, so a parameter named "__proto__" is reported as unknown, not obeyed.
  const parsed = SearchParams.safeParse(Object.fromEntries(entries));
  if (!parsed.success) issues.push(...toIssues(parsed.error));
  return parsed.success && issues.length === 0 ? { ok: true, params: parsed.data } : { ok: false, issues };
}

/**
 * The query string of `params`, parameters in their schema's order and values percent-encoded (RFC 3986),
 * which parseSearchQuery reads back as the same parameters: the same search always gives the same string.
 */
export function searchQueryString(params: SearchParams): string {
  return Object.keys(searchParamsShape)
    .flatMap((name) => {
      const value = params[name as keyof SearchParams];
      return value === undefined ? [] : [`${name}=${encodeURIComponent(String(value))}`];
    })
    .join('&');
}

/** The `{date}` of GET /api/reviews/since/{date}: a real calendar date, YYYY-MM-DD; issues have path ["date"]. */
export function parseSinceDate(value: string): SinceDateResult {
  const parsed = SinceParams.safeParse({ date: value });
  return parsed.success ? { ok: true, date: parsed.data.date } : { ok: false, issues: toIssues(parsed.error) };
}

/** One issue per parameter of a query string given to an endpoint that takes none, named at its path. */
export function unexpectedParameters(query: RawQuery): Issue[] {
  return Object.keys(query).map((name) => customIssue([name], 'unknown parameter: this endpoint takes no query parameters'));
}
