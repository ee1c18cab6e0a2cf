/** Conditional request evaluation for GET/HEAD, RFC 9110 §13. */

import { isFieldName } from './field-names.js';

const ENTITY_TAG = /(W\/)?"([^"]*)"/g;

/** If-None-Match uses weak comparison (§13.1.2): `W/"x"` matches `"x"`; `*` matches any current representation. */
export function ifNoneMatchMatches(header: string, etag: string): boolean {
  // The common revalidation: a client echoing the one ETag it got.
  if (header === etag) return true;
  if (header.trim() === '*') return true;
  const opaque = etag.startsWith('W/') ? etag.slice(2) : etag;
  for (const match of header.matchAll(ENTITY_TAG)) {
    if (`"${match[2]}"` === opaque) return true;
  }
  return false;
}

/**
 * If-Match uses strong comparison (§13.1.1): `*` matches any current representation, a listed tag only
 * when neither it nor the current ETag is weak and the opaque tags are equal.
 */
export function ifMatchMatches(header: string, etag: string): boolean {
  if (header.trim() === '*') return true;
  if (etag.startsWith('W/')) return false;
  for (const match of header.matchAll(ENTITY_TAG)) {
    if (match[1] === undefined && `"${match[2]}"` === etag) return true;
  }
  return false;
}

const MONTH_NAMES = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const MONTHS = MONTH_NAMES.join('|');
const TIME = '(\\d{2}):(\\d{2}):(\\d{2})';
/** The three HTTP-date forms (§5.6.7), each capturing day, month, year and time. */
const IMF_FIXDATE = new RegExp(`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (\\d{2}) (${MONTHS}) (\\d{4}) ${TIME} GMT$`);
const RFC_850_DATE = new RegExp(`^(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), (\\d{2})-(${MONTHS})-(\\d{2}) ${TIME} GMT$`);
const ASCTIME_DATE = new RegExp(`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (${MONTHS}) ([ \\d]\\d) ${TIME} (\\d{4})$`);

const FIFTY_YEARS_MS = 50 * 365.25 * 24 * 3600 * 1000;

/**
 * Milliseconds of a valid HTTP-date, or null: an invalid If-Modified-Since must be ignored (§13.1.3).
 * Valid means a real time of a real day: hour 00-23, minute 00-59, second 00-60, where 60, a leap
 * second, is read as 59 (§5.6.7); JavaScript's Date.parse would read 14:23:60 as 14:23:00 and 31 Nov
 * as 1 Dec. An rfc850-date's two-digit year is in this century unless that is more than 50 years
 * ahead of `now`, then in the previous one (§5.6.7), not JavaScript's fixed 1950-2049 window.
 */
export function parseHttpDate(value: string, now = Date.now()): number | null {
  const trimmed = value.trim();
  let match = IMF_FIXDATE.exec(trimmed);
  if (match) return utcMs(Number(match[3]), match[2]!, match[1]!, match.slice(4));
  match = ASCTIME_DATE.exec(trimmed);
  if (match) return utcMs(Number(match[6]), match[1]!, match[2]!, match.slice(3, 6));
  match = RFC_850_DATE.exec(trimmed);
  if (!match) return null;
  const century = Math.floor(new Date(now).getUTCFullYear() / 100) * 100;
  const inCentury = (start: number) => utcMs(start + Number(match[3]), match[2]!, match[1]!, match.slice(4));
  const ms = inCentury(century);
  return ms !== null && ms - now > FIFTY_YEARS_MS ? inCentury(century - 100) : ms;
}

function utcMs(year: number, monthName: string, dayText: string, [hour, minute, second]: readonly (string | undefined)[]): number | null {
  const [month, day, h, m, s] = [MONTH_NAMES.indexOf(monthName), Number(dayText.trim()), Number(hour), Number(minute), Number(second)];
  if (h > 23 || m > 59 || s > 60) return null;
  // setUTCFullYear, unlike Date.UTC, takes years below 100 as they are.
  const date = new Date(0);
  date.setUTCFullYear(year, month, day);
  date.setUTCHours(h, m, Math.min(s, 59));
  // A day past the month's end rolls into the next month: such a date is no date.
  return date.getUTCMonth() === month && date.getUTCDate() === day ? date.getTime() : null;
}

/**
 * Whether the field `lowerCaseName` comes on more than one line. node:http keeps only the first line
 * of a repeated If-Modified-Since or If-Unmodified-Since, where a field with more than one member
 * must be ignored (§13.1.3, §13.1.4).
 */
export function isRepeatedField(rawHeaders: readonly string[], lowerCaseName: string): boolean {
  let seen = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (isFieldName(rawHeaders[i]!, lowerCaseName) && ++seen > 1) return true;
  }
  return false;
}

export interface Validators {
  readonly etag: string;
  /** Last-Modified in ms, truncated to whole seconds like the header. */
  readonly lastModifiedMs: number;
  /** The previous version had the same Last-Modified: a date equal to it may stand for either. */
  readonly lastModifiedShared: boolean;
}

/** A valid date proves the client's copy is this version only when it is after a shared second. */
function modifiedSince(validators: Validators, since: number): boolean {
  return validators.lastModifiedShared ? validators.lastModifiedMs >= since : validators.lastModifiedMs > since;
}

/**
 * True when a GET/HEAD must be answered 412 (§13.2.2 steps 1-2, evaluated before If-None-Match):
 * If-Match fails, or, without If-Match, the representation changed after a valid If-Unmodified-Since.
 */
export function isPreconditionFailed(headers: { 'if-match'?: string | undefined; 'if-unmodified-since'?: string | undefined }, validators: Validators, rawHeaders: readonly string[] = []): boolean {
  const im = headers['if-match'];
  if (im !== undefined) return !ifMatchMatches(im, validators.etag);
  const ius = headers['if-unmodified-since'];
  if (ius === undefined) return false;
  const since = parseHttpDate(ius);
  return since !== null && !isRepeatedField(rawHeaders, 'if-unmodified-since') && modifiedSince(validators, since);
}

/** True when a GET/HEAD should be answered 304: If-None-Match wins; If-Modified-Since only without it (§13.2.2). */
export function isNotModified(headers: { 'if-none-match'?: string | undefined; 'if-modified-since'?: string | undefined }, validators: Validators, rawHeaders: readonly string[] = []): boolean {
  const inm = headers['if-none-match'];
  if (inm !== undefined) return ifNoneMatchMatches(inm, validators.etag);
  const ims = headers['if-modified-since'];
  if (ims === undefined) return false;
  const since = parseHttpDate(ims);
  return since !== null && !isRepeatedField(rawHeaders, 'if-modified-since') && !modifiedSince(validators, since);
}

/**
 * Preconditions on a 2xx response without validators (no ETag, no Last-Modified), such as a probe's
 * (§13.2.1: a server must still evaluate them): a listed If-Match tag cannot match (412), and
 * If-None-Match `*` matches the current representation (304); `*` and listed tags respectively
 * hold, and dates cannot be compared with a modification time the resource does not have.
 */
export function preconditionWithoutValidators(headers: { 'if-match'?: string | undefined; 'if-none-match'?: string | undefined }): 304 | 412 | null {
  const im = headers['if-match'];
  if (im !== undefined && im.trim() !== '*') return 412;
  const inm = headers['if-none-match'];
  return inm !== undefined && inm.trim() === '*' ? 304 : null;
}
