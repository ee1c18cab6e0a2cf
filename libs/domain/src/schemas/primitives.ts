import { z } from 'zod';

const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** True when `value` is YYYY-MM-DD and names a day that exists (no 2025-02-30). */
export function isCalendarDate(value: string): boolean {
  const match = ISO_DATE.exec(value);
  if (!match) return false;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const date = new Date(0);
  // setUTCFullYear, unlike Date.UTC, takes years 0-99 as they are instead of as 1900-1999.
  date.setUTCFullYear(year, month - 1, day);
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}

export const IsoDate = z
  .string()
  .refine(isCalendarDate, { message: 'must be a real calendar date in the form YYYY-MM-DD' })
  .meta({ format: 'date', description: 'Calendar date, YYYY-MM-DD (ISO 8601).', examples: ['2025-01-31'] });

/** The instants RFC 3339 can write in UTC, as the feeds do: years 0000 to 9999. */
const FIRST_INSTANT_MS = Date.parse('0000-01-01T00:00:00Z');
const LAST_INSTANT_MS = Date.parse('9999-12-31T23:59:59.999Z');

export const IsoDateTime = z.iso
  .datetime({ offset: true, error: 'must be an RFC 3339 timestamp with its offset from UTC, such as 2025-07-01T12:00:00Z or 2025-07-01T14:00:00+02:00' })
  // 0000-01-01T00:00:00+01:00 is in year -1 in UTC, which the Atom feed then wrote as -000001-12-31T23:00:00Z.
  // A value that is no timestamp at all (NaN) has the format's issue alone.
  .refine((value) => !(Date.parse(value) < FIRST_INSTANT_MS || Date.parse(value) > LAST_INSTANT_MS), { message: 'must fall between 0000-01-01 and 9999-12-31 in UTC' })
  .meta({ description: 'Timestamp, RFC 3339.' });

/** 26 Crockford base32 characters, without anchors so other patterns can hold one. */
export const ULID_CHARACTERS = '[0-9A-HJKMNP-TV-Z]{26}';

export const Ulid = z
  .string()
  .regex(new RegExp(`^${ULID_CHARACTERS}$`), 'must be a ULID (26 Crockford base32 characters)')
  .meta({ description: 'ULID, stable across re-publishes.', examples: ['01HZX3K9QW8E5R7T2Y4V6J8M0P'] });

/**
 * Characters a URI (RFC 3986) or IRI (RFC 3987) never holds as such. The URL parser accepts and
 * escapes them, but a dataset's ASCII URL is written into feeds as given, where it must be valid:
 * no bidirectional formatting characters (RFC 3987 §4.1: a right-to-left override makes
 * `…/\u202efdp.exe` display as `…/exe.pdf`), and no specials or noncharacters (outside its ucschar;
 * XML cannot hold U+FFFE either, so the Atom feed dropped it while the JSON Feed kept it).
 */
const NOT_IN_AN_IRI = /[\s<>"{}|\\^`\p{Cc}\u200E\u200F\u202A-\u202E\u2066-\u2069\uFFF0-\uFFFD\p{Noncharacter_Code_Point}]/u;

const UNRESERVED_OR_SUB_DELIM = String.raw`A-Za-z0-9\-._~!$&'()*+,;=`;
const PERCENT_ENCODED = '%[0-9A-Fa-f]{2}';
const PATH_CHARACTER = `(?:[${UNRESERVED_OR_SUB_DELIM}:@]|${PERCENT_ENCODED})`;
/** An absolute http(s) URI by RFC 3986's grammar (§3), which JSON Schema's `format: uri` names. */
const HTTP_URI = new RegExp(
  `^https?://(?:(?:[${UNRESERVED_OR_SUB_DELIM}:]|${PERCENT_ENCODED})*@)?(?:\\[[0-9A-Fa-f:.]+\\]|(?:[${UNRESERVED_OR_SUB_DELIM}]|${PERCENT_ENCODED})*)(?::[0-9]*)?` +
    `(?:/${PATH_CHARACTER}*)*(?:\\?(?:${PATH_CHARACTER}|[/?])*)?(?:#(?:${PATH_CHARACTER}|[/?])*)?$`,
  'i',
);

/**
 * The URI an IRI maps to (RFC 3987 §3.1): the host in punycode, other non-ASCII characters
 * percent-encoded as UTF-8, as the WHATWG parser writes it. An ASCII URL is kept as written.
 */
function asUri(value: string): string {
  return /[^ -~]/.test(value) ? (URL.parse(value)?.href ?? value) : value;
}

/**
 * An absolute http(s) URL, served as a URI: the schemas say `format: uri` (RFC 3986, ASCII), which
 * the MCP SDK's client enforces on every tool result, so a dataset's IRI (`https://例え.example/レビュー`)
 * is served as the URI it maps to, in every representation alike.
 */
export const HttpUrl = z
  .url({ protocol: /^https?$/, error: 'must be an absolute http or https URL with a valid host and port, such as https://example.com/page' })
  .refine((value) => !NOT_IN_AN_IRI.test(value) && HTTP_URI.test(asUri(value)), {
    // Not after the URL's own issue: `javascript:alert(1)` is not an http URL, and saying so is enough.
    when: (payload) => payload.issues.length === 0,
    message:
      'must be a valid URI or IRI: no spaces, control or bidirectional formatting characters, noncharacters, or any of < > " { } | \\ ^ `; % only before two hex digits, [ ] only around an IPv6 host, # only once',
  })
  .overwrite(asUri);

/** What a text may not consist of alone (VisibleText). */
const INVISIBLE_CHARACTERS = String.raw`\s\p{Cc}\p{Cf}\p{Z}\u115F\u1160\u2800\u3164\uFFA0`;

/**
 * A pattern matching a character outside `invisible`, in the subset of regular expressions every
 * JSON Schema validator reads alike: the class's characters of the Basic Multilingual Plane, written
 * as literal characters and ranges. Property escapes such as `\p{Cf}` are ECMA-262 only (JSON Schema
 * asks for a portable subset): Python's `re` refuses them, so the Python MCP SDK refused every call of a
 * tool whose outputSchema held one. An astral character in the class (a tag character, say) cannot
 * be written so that regular expressions without Unicode mode read it, so the pattern lets a text of
 * only such characters through; the service's own check (`invisible`) still refuses it.
 */
function visibleCharacterPattern(invisible: RegExp): string {
  let pattern = '';
  for (let code = 0; code <= 0xffff; code++) {
    if (!invisible.test(String.fromCharCode(code))) continue;
    let last = code;
    while (last < 0xffff && invisible.test(String.fromCharCode(last + 1))) last++;
    pattern += last === code ? String.fromCharCode(code) : `${String.fromCharCode(code)}-${String.fromCharCode(last)}`;
    code = last;
  }
  return `[^${pattern}]`;
}

const VISIBLE_CHARACTER = new RegExp(`[^${INVISIBLE_CHARACTERS}]`, 'u');
const VISIBLE_CHARACTER_PORTABLE_PATTERN = visibleCharacterPattern(new RegExp(`[${INVISIBLE_CHARACTERS}]`, 'u'));
const NOTHING_VISIBLE = 'must contain a visible character, not only white space, control, format or filler characters';

/**
 * Text a feed shows as a name, a title or an entry's content: white space, controls and format or
 * filler characters alone would show as nothing (an Atom `<name>   </name>`, which feed readers
 * replaced with the business's name; U+0085 alone is white space to Python's `strip()`). Where the
 * field may be null, `instead` says so in the message: a publisher who wrote "" meant "none".
 */
export function visibleText(instead?: string) {
  return z
    .string()
    .regex(VISIBLE_CHARACTER, instead ? `${NOTHING_VISIBLE}; ${instead}` : NOTHING_VISIBLE)
    .meta({ pattern: VISIBLE_CHARACTER_PORTABLE_PATTERN });
}

export const VisibleText = visibleText();

/** A time of day on the 24-hour clock, HH:MM; 24:00 is the end of the day, as ISO 8601 and schema.org allow. */
export const TimeOfDay = z
  .string()
  .regex(/^(?:(?:[01]\d|2[0-3]):[0-5]\d|24:00)$/, 'must be a time of day, HH:MM from 00:00 to 23:59 (or 24:00 for the end of the day)')
  .meta({ examples: ['08:00'] });

/** Lower-case slug used for service, problem, topic and aspect ids. */
export const Slug = z.string().regex(/^[a-z0-9]+(?:[-_][a-z0-9]+)*$/, 'must be a lower-case slug (a-z, 0-9, - or _)');

export const Sentiment = z.enum(['positive', 'neutral', 'negative']);
export type Sentiment = z.infer<typeof Sentiment>;

export const Score = z.number().min(-1).max(1).meta({ description: 'Sentiment score from -1 (negative) to 1 (positive).' });
export const Percent = z.number().min(0).max(100).meta({ description: 'Percentage, 0 to 100.' });
