/** Byte-range requests on a GET representation (RFC 9110 §14, §13.1.5). */

/** Positions of the first and last byte sent, both inclusive, as `Content-Range` writes them. */
export interface ByteRange {
  readonly first: number;
  readonly last: number;
}

/**
 * What a `Range` field asks of a representation: `whole` when it is to be ignored (another unit,
 * invalid syntax, or ranges that do not join into one, which §14.2 lets a server answer with the
 * whole representation rather than a multipart body), one range, or none that the bytes can satisfy.
 */
export type RangeRequest = { readonly kind: 'whole' } | { readonly kind: 'partial'; readonly range: ByteRange } | { readonly kind: 'unsatisfiable' };

const WHOLE: RangeRequest = { kind: 'whole' };
const UNSATISFIABLE: RangeRequest = { kind: 'unsatisfiable' };

/** More range-specs than this is no download resuming; a header of them costs a parse per request for nothing. */
const MAX_RANGE_SPECS = 100;

const INT_RANGE = /^(\d+)-(\d*)$/;
const SUFFIX_RANGE = /^-(\d+)$/;
/** OWS around list elements (§5.6.1): spaces and horizontal tabs only. */
const OWS = /^[ \t]+|[ \t]+$/g;

/** Compares two digit strings by value, exactly, however long (a position past 2^53 is still past the end). */
function compareDigits(a: string, b: string): number {
  const [x, y] = [a.replace(/^0+(?=\d)/, ''), b.replace(/^0+(?=\d)/, '')];
  if (x.length !== y.length) return x.length - y.length;
  return x < y ? -1 : x > y ? 1 : 0;
}

/** A position or length no larger than `cap`, read exactly when it is within it. */
function atMost(digits: string, cap: number): number {
  return compareDigits(digits, String(cap)) > 0 ? cap : Number(digits);
}

/**
 * Reads a `Range` field against a representation of `length` bytes (§14.1.1-§14.1.2): `bytes=` (the
 * unit case-insensitive) followed by a list of `first-last`, `first-` and `-suffix` ranges. Satisfiable
 * ranges that overlap or touch are joined (§15.3.7.2 lets a server coalesce them in any order).
 */
export function requestedRange(field: string, length: number): RangeRequest {
  const equals = field.indexOf('=');
  if (equals === -1 || field.slice(0, equals).toLowerCase() !== 'bytes' || length === 0) return WHOLE;
  const specs = field
    .slice(equals + 1)
    .split(',')
    .map((element) => element.replace(OWS, ''))
    .filter((element) => element !== '');
  if (specs.length === 0 || specs.length > MAX_RANGE_SPECS) return WHOLE;
  const satisfiable: ByteRange[] = [];
  for (const spec of specs) {
    const int = INT_RANGE.exec(spec);
    if (int !== null) {
      const [, first, last] = int as unknown as [string, string, string];
      if (last !== '' && compareDigits(last, first) < 0) return WHOLE;
      if (compareDigits(first, String(length)) < 0) satisfiable.push({ first: Number(first), last: last === '' ? length - 1 : atMost(last, length - 1) });
      continue;
    }
    const suffix = SUFFIX_RANGE.exec(spec);
    if (suffix === null) return WHOLE;
    const suffixLength = atMost(suffix[1]!, length);
    if (suffixLength > 0) satisfiable.push({ first: length - suffixLength, last: length - 1 });
  }
  if (satisfiable.length === 0) return UNSATISFIABLE;
  satisfiable.sort((a, b) => a.first - b.first);
  let joined = satisfiable[0]!;
  for (const range of satisfiable.slice(1)) {
    if (range.first > joined.last + 1) return WHOLE;
    joined = { first: joined.first, last: Math.max(joined.last, range.last) };
  }
  return { kind: 'partial', range: joined };
}

/**
 * Whether an `If-Range` lets the range through (§13.1.5): only the representation's own strong ETag
 * does. A date never does: a Last-Modified here is shared by the three content-codings of a
 * representation and, across replicas and releases, by different bytes (README, HTTP behaviour), so
 * it is not the strong validator §13.1.5 requires, and the client gets the whole representation.
 */
export function ifRangeHolds(field: string, etag: string): boolean {
  return !etag.startsWith('W/') && field.replace(OWS, '') === etag;
}
