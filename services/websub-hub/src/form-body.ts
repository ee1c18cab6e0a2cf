import { hexValue } from '@reviews/runtime';

/** The form's fields in order, or a refusal whose message names the field that is not UTF-8. */
export type DecodedForm = { readonly ok: true; readonly form: URLSearchParams } | { readonly ok: false; readonly message: string };

/** Refuses what the WHATWG parser would silently turn into U+FFFD. Keeps a leading BOM, as that parser does. */
const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

const AMPERSAND = 0x26;
const EQUALS = 0x3d;
const PLUS = 0x2b;
const PERCENT = 0x25;
const SPACE = 0x20;
const UTF8_BOM = [0xef, 0xbb, 0xbf];

/**
 * Parse an `application/x-www-form-urlencoded` body as the WHATWG URL standard does (split on `&`,
 * then the first `=`, `+` is a space, `%XX` a byte, a `%` without two hex digits stays), except that
 * bytes which are not UTF-8 refuse the body instead of becoming U+FFFD. W3C WebSub §5.1 requires
 * UTF-8, and a silently replaced byte would make the hub verify a callback the subscriber never gave.
 * A body that starts with a byte order mark is refused too, naming it.
 */
export function decodeUtf8Form(body: Uint8Array): DecodedForm {
  // The WHATWG parser keeps a BOM as part of the first name, which then reads as a missing field.
  if (UTF8_BOM.every((byte, i) => body[i] === byte)) {
    return { ok: false, message: 'The body starts with a UTF-8 byte order mark (EF BB BF); send the form without it.' };
  }
  const form = new URLSearchParams();
  let start = 0;
  while (start <= body.length) {
    const end = indexOrLength(body, AMPERSAND, start, body.length);
    if (end > start) {
      const equals = indexOrLength(body, EQUALS, start, end);
      const rawName = body.subarray(start, equals);
      const name = decodeStrict(rawName);
      if (name === null) return notUtf8(`${printable(rawName)} (a field name)`);
      const value = decodeStrict(body.subarray(Math.min(equals + 1, end), end));
      if (value === null) return notUtf8(name);
      form.append(name, value);
    }
    start = end + 1;
  }
  return { ok: true, form };
}

function notUtf8(field: string): DecodedForm {
  return { ok: false, message: `${field}: is not valid UTF-8 once percent-decoded (W3C WebSub §5.1 requires a UTF-8 form)` };
}

function indexOrLength(bytes: Uint8Array, byte: number, from: number, to: number): number {
  const at = bytes.subarray(from, to).indexOf(byte);
  return at === -1 ? to : from + at;
}

/** `+` and `%XX` decoded to bytes, then UTF-8 decoded; null when those bytes are not UTF-8. */
function decodeStrict(raw: Uint8Array): string | null {
  const bytes = new Uint8Array(raw.length);
  let n = 0;
  for (let i = 0; i < raw.length; i++) {
    const byte = raw[i] as number;
    if (byte === PERCENT) {
      const high = hexValue(raw[i + 1]);
      const low = hexValue(raw[i + 2]);
      if (high !== -1 && low !== -1) {
        bytes[n++] = high * 16 + low;
        i += 2;
        continue;
      }
    }
    bytes[n++] = byte === PLUS ? SPACE : byte;
  }
  try {
    return strictUtf8.decode(bytes.subarray(0, n));
  } catch {
    return null;
  }
}

/** A field name that is not UTF-8 is shown as sent, with every byte outside printable ASCII escaped. */
function printable(raw: Uint8Array): string {
  return [...raw].map((byte) => (byte > 0x20 && byte < 0x7f ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`)).join('');
}
