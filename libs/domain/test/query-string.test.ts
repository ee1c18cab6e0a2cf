import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { groupQueryString, parseSearchQuery, parseSinceDate, SearchParams, searchQueryString } from '@reviews/domain';

const issuesOf = (query: Record<string, string | string[] | undefined>) => {
  const result = parseSearchQuery(query);
  if (result.ok) throw new Error(`expected issues for ${JSON.stringify(query)}`);
  return result.issues;
};
const pathsOf = (query: Record<string, string | string[] | undefined>) => issuesOf(query).map((issue) => issue.path);

describe('parseSearchQuery', () => {
  it('applies the default limit to an empty query', () => {
    expect(parseSearchQuery({})).toEqual({ ok: true, params: { limit: 20 } });
  });

  it('converts numeric parameters and keeps text parameters as text', () => {
    expect(
      parseSearchQuery({ rating: '5', min_rating: '3.5', limit: '100', since: '2024-02-29', until: '2024-03-01', query: '2024', mentions_technician: '42', mentions_service: 'direct-cremation' }),
    ).toEqual({
      ok: true,
      params: { rating: 5, min_rating: 3.5, limit: 100, since: '2024-02-29', until: '2024-03-01', query: '2024', mentions_technician: '42', mentions_service: 'direct-cremation' },
    });
  });

  it('accepts a parameter given once as a one-element array and skips undefined ones', () => {
    expect(parseSearchQuery({ rating: ['4'], query: undefined })).toEqual({ ok: true, params: { rating: 4, limit: 20 } });
  });

  it.each([
    ['rating', '0', 'too_small'],
    ['rating', '6', 'too_big'],
    ['rating', '4.5', 'invalid_type'],
    ['rating', 'five', 'invalid_type'],
    ['rating', '', 'invalid_type'],
    ['rating', ' 5', 'invalid_type'],
    ['rating', '1e1', 'invalid_type'],
    ['rating', '0x5', 'invalid_type'],
    ['min_rating', '0.99', 'too_small'],
    ['min_rating', '5.01', 'too_big'],
    ['min_rating', '-3', 'too_small'],
    ['limit', '0', 'too_small'],
    ['limit', '101', 'too_big'],
    ['limit', '10.5', 'invalid_type'],
    ['since', '2025-02-30', 'custom'],
    ['since', '2025-1-5', 'custom'],
    ['until', '20250105', 'custom'],
    ['query', '', 'too_small'],
    ['query', 'x'.repeat(201), 'too_big'],
    ['mentions_technician', '', 'too_small'],
    ['mentions_service', 'x'.repeat(101), 'too_big'],
  ])('rejects %s=%j with a %s issue at that parameter', (name, value, code) => {
    expect(issuesOf({ [name]: value })).toEqual([expect.objectContaining({ code, path: [name], message: expect.any(String) })]);
  });

  it('says "expected number" for text in a numeric parameter', () => {
    expect(issuesOf({ limit: 'ten' })[0]?.message).toMatch(/expected number/);
  });

  it('takes years 0000-0099 as written (RFC 3339 full-date), not as 1900-1999', () => {
    expect(parseSearchQuery({ since: '0001-01-01', until: '0050-06-15' }).ok).toBe(true);
    expect(parseSearchQuery({ since: '0000-02-29' }).ok).toBe(true);
    expect(issuesOf({ since: '0001-02-29' })).toEqual([expect.objectContaining({ path: ['since'] })]);
  });

  it('accepts the bounds themselves', () => {
    expect(parseSearchQuery({ rating: '1', min_rating: '5', limit: '1' }).ok).toBe(true);
    expect(parseSearchQuery({ rating: '5', min_rating: '1', limit: '100' }).ok).toBe(true);
    expect(parseSearchQuery({ since: '2025-01-01', until: '2025-01-01' }).ok).toBe(true);
  });

  it('rejects since after until, at until', () => {
    expect(issuesOf({ since: '2025-01-02', until: '2025-01-01' })).toEqual([expect.objectContaining({ path: ['until'], message: 'until must be on or after since' })]);
  });

  it('says nothing of the order when since or until is no date: only that it is none', () => {
    const notADate = 'must be a real calendar date in the form YYYY-MM-DD';
    expect(issuesOf({ since: '2025-03-01', until: '2025-02-30' })).toEqual([expect.objectContaining({ path: ['until'], message: notADate })]);
    expect(issuesOf({ since: 'y', until: 'x' })).toEqual([expect.objectContaining({ path: ['since'], message: notADate }), expect.objectContaining({ path: ['until'], message: notADate })]);
  });

  it('rejects a repeated parameter', () => {
    expect(issuesOf({ rating: ['4', '5'] })).toEqual([{ code: 'custom', path: ['rating'], message: 'must be given at most once' }]);
  });

  it('rejects each unknown parameter by name, including prototype keys', () => {
    expect(issuesOf(Object.fromEntries([['sort', 'date'], ['__proto__', 'x']]))).toEqual([
      { code: 'unrecognized_keys', path: ['sort'], message: 'Unrecognized key: "sort"' },
      { code: 'unrecognized_keys', path: ['__proto__'], message: 'Unrecognized key: "__proto__"' },
    ]);
  });

  it('reports every problem at once', () => {
    expect(pathsOf({ rating: '9', limit: ['1', '2'], since: 'yesterday', colour: 'red' })).toEqual([['limit'], ['rating'], ['since'], ['colour']]);
  });
});

describe('searchQueryString', () => {
  /** What URLSearchParams gives the parser, as the read API groups a query string. */

  it('writes the parameters in their schema order, percent-encoded', () => {
    const params = SearchParams.parse({ cursor: '2025-06-30~01HZX3K9QW8E5R7T2Y4V6J8M0P', query: 'café & co+', min_rating: 4.5 });
    expect(searchQueryString(params)).toBe('min_rating=4.5&query=caf%C3%A9%20%26%20co%2B&limit=20&cursor=2025-06-30~01HZX3K9QW8E5R7T2Y4V6J8M0P');
  });

  it('is read back as the same parameters, whatever they hold', () => {
    const params = fc.record(
      {
        rating: fc.integer({ min: 1, max: 5 }),
        min_rating: fc.double({ min: 1, max: 5, noNaN: true }),
        since: fc.constantFrom('2024-02-29', '2025-01-01'),
        until: fc.constantFrom('2025-06-30', '2026-12-31'),
        query: fc.string({ minLength: 1, maxLength: 40, unit: 'grapheme' }),
        mentions_technician: fc.string({ minLength: 1, maxLength: 20 }),
        mentions_service: fc.string({ minLength: 1, maxLength: 20 }),
        limit: fc.integer({ min: 1, max: 100 }),
        cursor: fc.constant('2025-06-30~01HZX3K9QW8E5R7T2Y4V6J8M0P'),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(params, (raw) => {
        const parsed = SearchParams.safeParse(raw);
        fc.pre(parsed.success);
        if (!parsed.success) return;
        expect(parseSearchQuery(groupQueryString(searchQueryString(parsed.data)))).toEqual({ ok: true, params: parsed.data });
      }),
      { numRuns: 300, seed: 20261128 },
    );
  });
});

describe('parseSinceDate', () => {
  it('accepts a real calendar date', () => {
    expect(parseSinceDate('2024-02-29')).toEqual({ ok: true, date: '2024-02-29' });
  });

  it.each(['2023-02-29', '2025-13-01', '2025-01-1', 'today', ''])('rejects %j at path date', (value) => {
    expect(parseSinceDate(value)).toEqual({ ok: false, issues: [expect.objectContaining({ code: 'custom', path: ['date'] })] });
  });
});
