import { describe, it, expect } from '@jest/globals';
import { ifMatchMatches, ifNoneMatchMatches, isNotModified, isPreconditionFailed, parseHttpDate } from '@reviews/runtime';

describe('If-None-Match (weak comparison)', () => {
  it.each([
    ['"abc"', '"abc"', true],
    ['W/"abc"', '"abc"', true],
    ['"abc"', 'W/"abc"', true],
    ['"x", "abc"', '"abc"', true],
    ['"x",W/"abc"', '"abc"', true],
    ['*', '"abc"', true],
    [' * ', '"abc"', true],
    ['"abcd"', '"abc"', false],
    ['abc', '"abc"', false],
    ['"abc-gz"', '"abc"', false],
    ['', '"abc"', false],
  ] as const)('%p vs %p -> %p', (header, etag, expected) => {
    expect(ifNoneMatchMatches(header, etag)).toBe(expected);
  });
});

describe('HTTP-date parsing', () => {
  it('accepts the three HTTP-date forms', () => {
    const ms = Date.UTC(1994, 10, 6, 8, 49, 37);
    expect(parseHttpDate('Sun, 06 Nov 1994 08:49:37 GMT')).toBe(ms);
    expect(parseHttpDate('Sunday, 06-Nov-94 08:49:37 GMT')).toBe(ms);
    expect(parseHttpDate('Sun Nov  6 08:49:37 1994')).toBe(ms);
  });

  it('reads an rfc850 two-digit year in this century unless that is more than 50 years ahead, as RFC 9110 §5.6.7 says, not in 1950-2049', () => {
    const now = Date.UTC(2026, 10, 27);
    expect(parseHttpDate('Friday, 07-Nov-70 09:08:24 GMT', now)).toBe(Date.UTC(2070, 10, 7, 9, 8, 24));
    expect(parseHttpDate('Saturday, 07-Nov-26 09:08:24 GMT', now)).toBe(Date.UTC(2026, 10, 7, 9, 8, 24));
    expect(parseHttpDate('Sunday, 06-Nov-94 08:49:37 GMT', now)).toBe(Date.UTC(1994, 10, 6, 8, 49, 37));
    expect(parseHttpDate('Wednesday, 07-Nov-77 09:08:24 GMT', now)).toBe(Date.UTC(1977, 10, 7, 9, 8, 24));
    expect(parseHttpDate('Saturday, 07-Nov-76 09:08:24 GMT', now)).toBe(Date.UTC(2076, 10, 7, 9, 8, 24));
  });

  it.each([
    'yesterday',
    '2024-01-01',
    '1',
    'Sun, 06 Nov 1994 08:49:37',
    'Sun, 32 Nov 1994 08:49:37 GMT',
    '',
    // Times and days that do not exist, which Date.parse rolls over into real ones.
    'Tue, 31 Nov 2026 00:00:00 GMT',
    'Fri, 27 Nov 2026 24:00:00 GMT',
    'Fri, 27 Nov 2026 14:60:00 GMT',
    'Fri, 27 Nov 2026 14:23:61 GMT',
    'Sun, 29 Feb 2026 00:00:00 GMT',
    'Sun, 00 Nov 1994 08:49:37 GMT',
    'Tuesday, 31-Nov-26 00:00:00 GMT',
    'Tue Nov 31 00:00:00 2026',
  ])('rejects %p', (value) => {
    expect(parseHttpDate(value)).toBeNull();
  });

  it('reads a leap second (second 60, RFC 9110 §5.6.7) as the second before it, not as the start of the minute', () => {
    expect(parseHttpDate('Wed, 31 Dec 2016 23:59:60 GMT')).toBe(Date.UTC(2016, 11, 31, 23, 59, 59));
    expect(parseHttpDate('Fri, 27 Nov 2026 14:23:60 GMT')).toBe(Date.UTC(2026, 10, 27, 14, 23, 59));
  });

  it('takes 29 February in a leap year, and a four-digit year below 100 as it is', () => {
    expect(parseHttpDate('Thu, 29 Feb 2024 12:00:00 GMT')).toBe(Date.UTC(2024, 1, 29, 12));
    expect(new Date(parseHttpDate('Sat, 01 Jan 0050 00:00:00 GMT')!).getUTCFullYear()).toBe(50);
  });
});

describe('isNotModified', () => {
  const validators = { etag: '"v1"', lastModifiedMs: Date.UTC(2025, 0, 1), lastModifiedShared: false };
  const after = 'Thu, 02 Jan 2025 00:00:00 GMT';
  const before = 'Tue, 31 Dec 2024 00:00:00 GMT';
  const exact = 'Wed, 01 Jan 2025 00:00:00 GMT';

  it('honours If-Modified-Since when no If-None-Match is sent', () => {
    expect(isNotModified({ 'if-modified-since': after }, validators)).toBe(true);
    expect(isNotModified({ 'if-modified-since': exact }, validators)).toBe(true);
    expect(isNotModified({ 'if-modified-since': before }, validators)).toBe(false);
  });

  it('ignores an invalid If-Modified-Since', () => {
    expect(isNotModified({ 'if-modified-since': 'not a date' }, validators)).toBe(false);
  });

  it('answers a date equal to a second the previous version shared with 200: it may stand for either version', () => {
    const shared = { ...validators, lastModifiedShared: true };
    expect(isNotModified({ 'if-modified-since': exact }, shared)).toBe(false);
    expect(isNotModified({ 'if-modified-since': after }, shared)).toBe(true);
    expect(isNotModified({ 'if-modified-since': before }, shared)).toBe(false);
  });

  it('lets If-None-Match take precedence over If-Modified-Since', () => {
    expect(isNotModified({ 'if-none-match': '"other"', 'if-modified-since': after }, validators)).toBe(false);
    expect(isNotModified({ 'if-none-match': '"v1"', 'if-modified-since': before }, validators)).toBe(true);
  });
});

describe('If-Match (strong comparison)', () => {
  it.each([
    ['"abc"', '"abc"', true],
    ['"x", "abc"', '"abc"', true],
    ['*', '"abc"', true],
    ['W/"abc"', '"abc"', false],
    ['"abc"', 'W/"abc"', false],
    ['"abc-gz"', '"abc"', false],
    ['', '"abc"', false],
  ] as const)('%p vs %p -> %p', (header, etag, expected) => {
    expect(ifMatchMatches(header, etag)).toBe(expected);
  });
});

describe('isPreconditionFailed (RFC 9110 §13.2.2 steps 1-2)', () => {
  const validators = { etag: '"v1"', lastModifiedMs: Date.UTC(2025, 0, 1), lastModifiedShared: false };
  const after = 'Thu, 02 Jan 2025 00:00:00 GMT';
  const before = 'Tue, 31 Dec 2024 00:00:00 GMT';
  const exact = 'Wed, 01 Jan 2025 00:00:00 GMT';

  it('fails when If-Match does not match, holds when it does', () => {
    expect(isPreconditionFailed({ 'if-match': '"v0"' }, validators)).toBe(true);
    expect(isPreconditionFailed({ 'if-match': '"v1"' }, validators)).toBe(false);
    expect(isPreconditionFailed({}, validators)).toBe(false);
  });

  it('fails when the representation changed after If-Unmodified-Since; ignores an invalid date', () => {
    expect(isPreconditionFailed({ 'if-unmodified-since': before }, validators)).toBe(true);
    expect(isPreconditionFailed({ 'if-unmodified-since': exact }, validators)).toBe(false);
    expect(isPreconditionFailed({ 'if-unmodified-since': after }, validators)).toBe(false);
    expect(isPreconditionFailed({ 'if-unmodified-since': 'soon' }, validators)).toBe(false);
  });

  it('fails If-Unmodified-Since of a second the previous version shared: the client may hold that one', () => {
    const shared = { ...validators, lastModifiedShared: true };
    expect(isPreconditionFailed({ 'if-unmodified-since': exact }, shared)).toBe(true);
    expect(isPreconditionFailed({ 'if-unmodified-since': after }, shared)).toBe(false);
  });

  it('lets If-Match take precedence over If-Unmodified-Since', () => {
    expect(isPreconditionFailed({ 'if-match': '"v1"', 'if-unmodified-since': before }, validators)).toBe(false);
    expect(isPreconditionFailed({ 'if-match': '"v0"', 'if-unmodified-since': after }, validators)).toBe(true);
  });
});

describe('a date precondition on more than one field line is ignored (RFC 9110 §13.1.3, §13.1.4)', () => {
  const validators = { etag: '"v1"', lastModifiedMs: Date.UTC(2025, 0, 1), lastModifiedShared: false };
  const after = 'Thu, 02 Jan 2025 00:00:00 GMT';
  const before = 'Tue, 31 Dec 2024 00:00:00 GMT';

  it('If-Modified-Since: node:http keeps the first line; two lines are a list, which gets the full response', () => {
    const raw = ['Host', 'x', 'If-Modified-Since', after, 'if-modified-since', before];
    expect(isNotModified({ 'if-modified-since': after }, validators, raw)).toBe(false);
    expect(isNotModified({ 'if-modified-since': after }, validators, ['Host', 'x', 'IF-MODIFIED-SINCE', after])).toBe(true);
  });

  it('If-Unmodified-Since: two lines are ignored, never a 412', () => {
    const raw = ['If-Unmodified-Since', before, 'If-Unmodified-Since', after];
    expect(isPreconditionFailed({ 'if-unmodified-since': before }, validators, raw)).toBe(false);
    expect(isPreconditionFailed({ 'if-unmodified-since': before }, validators, raw.slice(0, 2))).toBe(true);
  });
});
