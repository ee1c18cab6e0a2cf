import type { Issue } from '@reviews/domain';

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
export function parseDatasetJson(bytes: Uint8Array): unknown {
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
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new NotDatasetJson({ code: 'invalid_json', path: [], message: `not valid JSON: ${(error as Error).message}` });
  }
}

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
