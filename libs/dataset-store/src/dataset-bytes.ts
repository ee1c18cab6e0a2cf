import { customIssue, type Issue } from '@reviews/domain';

/** Dataset bytes that are not JSON text; `issue` says why and where. */
export class NotDatasetJson extends Error {
  constructor(readonly issue: Issue) {
    super(issue.message);
  }
}

/**
 * Strict: bytes that are not UTF-8 throw instead of becoming U+FFFD, which would publish a corrupted
 * name or text as if the publisher had written it. A byte order mark at the start is dropped, as
 * RFC 8259 §8.1 lets a parser do (some Windows editors write one).
 */
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The JSON value of a dataset's bytes: the one place they become text, for the publish CLI and for
 * every replica's build (file or NATS) alike. JSON text is UTF-8 (RFC 8259 §8.1): other bytes are
 * refused with the byte offset of the first malformed sequence. Throws NotDatasetJson, as
 * JSON.parse would, so a caller holds no result object that keeps the parsed JSON alive.
 */
export function parseDatasetJson(bytes: Uint8Array, { canonical = false }: { canonical?: boolean } = {}): unknown {
  const crowded = crowdedAt(bytes);
  if (crowded !== -1) {
    throw new NotDatasetJson({
      code: 'invalid_json',
      path: [],
      message: `holds more than ${MAX_DATASET_VALUES.toLocaleString('en-US')} values in its arrays and objects (the limit was passed at byte offset ${crowded}); no dataset the store takes holds that many (100,000 reviews are about 3.4 million)`,
    });
  }
  let text: string;
  try {
    text = UTF8.decode(bytes);
  } catch (error) {
    // Anything else (a file too large for one string) is not about the encoding: say what it is.
    if ((error as NodeJS.ErrnoException).code !== 'ERR_ENCODING_INVALID_ENCODED_DATA') throw new NotDatasetJson({ code: 'invalid_json', path: [], message: `not valid JSON: ${(error as Error).message}` });
    const offset = firstMalformedOffset(bytes);
    const byte = (bytes[offset] ?? 0).toString(16).toUpperCase().padStart(2, '0');
    throw new NotDatasetJson({ code: 'invalid_utf8', path: [], message: `not valid UTF-8: malformed byte sequence at byte offset ${offset} (0x${byte}); save the file as UTF-8` });
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new NotDatasetJson({ code: 'invalid_json', path: [], message: `not valid JSON: ${(error as Error).message}` });
  }
  // A publisher's canonical bytes come from JSON.stringify, which cannot repeat a name.
  const repeated = canonical ? null : firstRepeatedName(text);
  if (repeated !== null) {
    throw new NotDatasetJson(customIssue(repeated, 'this name appears twice in its object; JSON.parse keeps the last silently (RFC 8259 §4: names SHOULD be unique), so say which one you mean'));
  }
  return value;
}

/**
 * Values a dataset's arrays and objects may hold, all together: a 256 MiB file of reviews holds about 9 million
 * (100,000 reviews, 101 MB, hold 3.4 million). Parsed, a value costs tens of bytes however short its text:
 * 250 MB of `[],` took 7.5 GB to be refused, and a checker with a 1 GiB heap died before it could say why.
 */
const MAX_DATASET_VALUES = 10_000_000;

/**
 * The byte offset at which the bytes' arrays and objects have passed MAX_DATASET_VALUES values, counted as
 * they open and as commas separate them outside strings, or -1. On the bytes, before any string or value is
 * made: UTF-8 sequences never hold an ASCII byte. About 1 ms a MB.
 */
function crowdedAt(bytes: Uint8Array): number {
  let values = 0;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i];
    if (byte === QUOTE) {
      // Skip the string, escapes included (a `\"` does not end it).
      for (i++; i < bytes.length && bytes[i] !== QUOTE; i++) if (bytes[i] === BACKSLASH) i++;
    } else if ((byte === COMMA || byte === OPEN_ARRAY || byte === OPEN_OBJECT) && ++values > MAX_DATASET_VALUES) {
      return i;
    }
  }
  return -1;
}

/**
 * The path of the first object member whose name its object already has, in JSON text known to be
 * valid. A publisher's `"rating": 5, "rating": 1` was served as 1, with nothing said.
 */
function firstRepeatedName(text: string): (string | number)[] | null {
  // One entry per open object or array: the names seen so far (null in an array), and the path to it.
  const names: (Set<string> | null)[] = [];
  const path: (string | number)[] = [];
  let expectingName = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      let end = i + 1;
      let escaped = false;
      for (let d = text.charCodeAt(end); d !== QUOTE; d = text.charCodeAt(end)) {
        if (d === BACKSLASH) {
          escaped = true;
          end++;
        }
        end++;
      }
      const seen = names[names.length - 1];
      if (expectingName && seen) {
        const name = escaped ? (JSON.parse(text.slice(i, end + 1)) as string) : text.slice(i + 1, end);
        if (seen.has(name)) return [...path.slice(0, -1), name];
        seen.add(name);
        path[path.length - 1] = name;
        expectingName = false;
      }
      i = end;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      names.push(c === OPEN_OBJECT ? new Set() : null);
      path.push(c === OPEN_OBJECT ? '' : 0);
      expectingName = c === OPEN_OBJECT;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      names.pop();
      path.pop();
      expectingName = false;
    } else if (c === COMMA) {
      if (names[names.length - 1]) expectingName = true;
      else path[path.length - 1] = (path[path.length - 1] as number) + 1;
    }
  }
  return null;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;

/**
 * Where the first byte sequence that is not well-formed UTF-8 starts (Unicode §3.9, table 3-7).
 * Asked only once the decoder refused the bytes: it does not say where.
 */
function firstMalformedOffset(bytes: Uint8Array): number {
  let offset = 0;
  while (offset < bytes.length) {
    const lead = bytes[offset]!;
    const length = lead < 0x80 ? 1 : lead >= 0xc2 && lead <= 0xdf ? 2 : lead >= 0xe0 && lead <= 0xef ? 3 : lead >= 0xf0 && lead <= 0xf4 ? 4 : 0;
    if (length === 0) return offset;
    // The second byte's range excludes overlong forms (after E0, F0), surrogates (ED) and code points above U+10FFFF (F4).
    const [low, high] = lead === 0xe0 ? [0xa0, 0xbf] : lead === 0xed ? [0x80, 0x9f] : lead === 0xf0 ? [0x90, 0xbf] : lead === 0xf4 ? [0x80, 0x8f] : [0x80, 0xbf];
    for (let k = 1; k < length; k++) {
      const next = bytes[offset + k];
      if (next === undefined || next < (k === 1 ? low : 0x80) || next > (k === 1 ? high : 0xbf)) return offset;
    }
    offset += length;
  }
  return offset;
}
