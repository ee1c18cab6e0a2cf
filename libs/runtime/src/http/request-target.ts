/**
 * The request line's target and the Host field, checked before any routing (RFC 9112 §3.2). Routes
 * match paths in origin-form (`/reviews.json?x`), so every other valid form is rewritten to it and
 * every invalid one is refused with a reason.
 */

import type { Issue } from '@reviews/domain';
import { isFieldName } from './field-names.js';

/** Why a request target is refused with 400. A target that is served is returned as a plain string, allocating nothing. */
export class TargetRefusal {
  constructor(
    readonly message: string,
    /** The query parameter at fault, as validation issues name one. */
    readonly issues?: readonly Issue[],
  ) {}
}

const ABSOLUTE_HTTP = /^https?:\/\/([^/?#]*)/i;
/**
 * Whether `target` holds a character no client sends unencoded (RFC 3986 §2, RFC 9112 §3.2: SHOULD
 * 400, never autocorrect): a control, space, DEL, `"`, `<`, `>`. Browsers (WHATWG URL) encode these
 * everywhere, but leave `[ ] |` raw in paths and `[ ] | \ ^ \` { }` raw in queries, so only the
 * path (before `queryStart`) refuses the latter four. One pass over the target, allocating nothing.
 */
function holdsUnencoded(target: string, queryStart: number): boolean {
  for (let i = 0; i < target.length; i++) {
    const code = target.charCodeAt(i);
    if (code <= SPACE || code === DEL || code === QUOTE || code === LESS_THAN || code === GREATER_THAN) return true;
    if (i < queryStart && (code === BACKSLASH || code === CARET || code === BACKTICK || code === LEFT_BRACE || code === RIGHT_BRACE)) return true;
  }
  return false;
}
const SPACE = 0x20;
const QUOTE = 0x22;
const LESS_THAN = 0x3c;
const GREATER_THAN = 0x3e;
const BACKSLASH = 0x5c;
const CARET = 0x5e;
const BACKTICK = 0x60;
const LEFT_BRACE = 0x7b;
const RIGHT_BRACE = 0x7d;
const DEL = 0x7f;
const PERCENT_TRIPLET = /%([0-9A-Fa-f]{2})/g;
/** RFC 3986 §2.3: these may be percent-encoded but are equivalent to their plain form. */
const UNRESERVED = /[A-Za-z0-9\-._~]/;

/**
 * Decodes the percent-escapes of unreserved characters (RFC 3986 §6.2.2.2), which name the same
 * URI as the plain characters; every other escape stays as written. Request targets and the
 * WebSub hub's topic and callback URLs are compared after it.
 */
export function decodeUnreservedEscapes(uri: string): string {
  return uri.replace(PERCENT_TRIPLET, (escape: string, hex: string) => {
    const char = String.fromCharCode(parseInt(hex, 16));
    return UNRESERVED.test(char) ? char : escape;
  });
}

/**
 * A URI's escapes in normal form (RFC 3986 §6.2.2.1–2): unreserved characters decoded, so
 * `/reviews%2Ejson` is `/reviews.json`, and the other escapes in upper case, so `%c3` is `%C3`.
 */
export function normalizeEscapes(uri: string): string {
  return decodeUnreservedEscapes(uri).replace(PERCENT_TRIPLET, (escape) => escape.toUpperCase());
}

const SLASH = 47;
const COLON = 58;
const LOWER_CASE_BIT = 0x20;

/** A path's escapes in normal form (`normalizeEscapes`); null when it is no URI path. */
function normalizePath(path: string): string | null {
  // A `%` not followed by two hex digits is not a URI (RFC 3986 §2.1).
  if (/%(?![0-9A-Fa-f]{2})/.test(path)) return null;
  return normalizeEscapes(path);
}

const INVALID_AUTHORITY = new TargetRefusal('The request target is an absolute URI whose authority is not a host with an optional numeric port (RFC 9110 §4.2.1: no empty host, no userinfo).');
const UNENCODED_CHARACTER = new TargetRefusal('The request target holds a character that must be percent-encoded (RFC 3986 §2): a control character, space, ", <, > or, in the path, \\, ^, `, { or }.');
const MALFORMED_ESCAPE = 'has a "%" that is not followed by two hexadecimal digits';
const NOT_UTF8 = 'is not valid UTF-8 once percent-decoded';

/** The name of a query pair, decoded when it can be, else as sent. */
function parameterName(pair: string): string {
  const equals = pair.indexOf('=');
  const raw = equals === -1 ? pair : pair.slice(0, equals);
  try {
    return decodeURIComponent(raw.replaceAll('+', ' '));
  } catch {
    return raw;
  }
}

/**
 * The refusal of a query whose escapes are bad (`problem`, the first found), naming every parameter whose escapes
 * are bad, so a client learns all the values to fix at once. Only for refused targets: served ones never get here.
 */
function queryRefusal(target: string, queryStart: number, problem: string): TargetRefusal {
  const issues: Issue[] = [];
  const named = new Set<string>();
  let pairStart = queryStart;
  for (const pair of target.slice(queryStart).split('&')) {
    const pairProblem = escapeProblem(target, pairStart, pairStart + pair.length);
    pairStart += pair.length + 1;
    const name = parameterName(pair);
    if (pairProblem === null || named.has(name)) continue;
    named.add(name);
    issues.push({ code: 'custom', path: [name], message: pairProblem });
  }
  return new TargetRefusal(`The request query ${problem}.`, issues);
}

/** The value of a hex digit's character or byte code, or -1 (also for none: past the end). */
export function hexValue(code: number | undefined): number {
  if (code === undefined) return -1;
  if (code >= 48 && code <= 57) return code - 48;
  const letter = code | LOWER_CASE_BIT;
  return letter >= 97 && letter <= 102 ? letter - 87 : -1;
}

/**
 * What is wrong with the escapes of `target` from `from` to `end`, or null: each `%` needs two hex digits
 * (RFC 3986 §2.1), and the bytes they spell must be UTF-8 (RFC 3629 §4: no overlong forms, surrogates or code
 * points past U+10FFFF), which every parameter is decoded as. A multi-byte character is written as consecutive
 * escapes. Walks from `%` to `%` only, allocating nothing. An escape cut short at `end` meets the `&` there.
 */
function escapeProblem(target: string, from: number, end: number): string | null {
  let pending = 0; // continuation bytes still owed by the current character
  let low = 0x80;
  let high = 0xbf;
  let next = -1; // where the owed continuation escape must start
  for (let at = target.indexOf('%', from); at !== -1 && at < end; at = target.indexOf('%', at + 3)) {
    const upper = hexValue(target.charCodeAt(at + 1));
    const lower = hexValue(target.charCodeAt(at + 2));
    if (upper === -1 || lower === -1) return MALFORMED_ESCAPE;
    const byte = upper * 16 + lower;
    if (pending > 0) {
      if (at !== next || byte < low || byte > high) return NOT_UTF8;
      pending--;
      low = 0x80;
      high = 0xbf;
    } else if (byte >= 0xc2 && byte <= 0xdf) {
      pending = 1;
    } else if (byte >= 0xe0 && byte <= 0xef) {
      pending = 2;
      if (byte === 0xe0) low = 0xa0;
      else if (byte === 0xed) high = 0x9f;
    } else if (byte >= 0xf0 && byte <= 0xf4) {
      pending = 3;
      if (byte === 0xf0) low = 0x90;
      else if (byte === 0xf4) high = 0x8f;
    } else if (byte >= 0x80) {
      return NOT_UTF8;
    }
    next = at + 3;
  }
  return pending > 0 ? NOT_UTF8 : null;
}

/** The refusal of a query (starting at `queryStart`) whose escapes from `from` on are bad, or null. */
function queryEscapeProblem(target: string, queryStart: number, from: number): TargetRefusal | null {
  const problem = escapeProblem(target, from, target.length);
  return problem === null ? null : queryRefusal(target, queryStart, problem);
}

/**
 * The origin-form of a request target: origin-form as is (its path normalized when it holds
 * percent-encoding), absolute-form (`http://host/path?q`, which a server must accept) reduced to
 * its path and query, asterisk-form for OPTIONS only. A fragment is never part of a target, and a
 * query's escapes must be well formed: routes decode it, and a lenient decoder would turn `a%2` or
 * `%FF` into some other query than the one sent.
 */
export function originForm(url: string, method: string | undefined): string | TargetRefusal {
  let target = url;
  if (target.charCodeAt(0) !== SLASH) {
    if (target === '*') return method === 'OPTIONS' ? target : new TargetRefusal('The target "*" is only valid for OPTIONS.');
    const absolute = ABSOLUTE_HTTP.exec(target);
    if (absolute === null) return new TargetRefusal('The request target must be a path or an absolute http(s) URI.');
    if (!isServerAuthority(absolute[1]!)) return INVALID_AUTHORITY;
    const rest = target.slice(absolute[0].length);
    target = rest.charCodeAt(0) === SLASH ? rest : `/${rest}`;
  }
  if (target.includes('#')) return new TargetRefusal('The request target must not contain a fragment (#).');
  const mark = target.indexOf('?');
  if (holdsUnencoded(target, mark === -1 ? target.length : mark)) return UNENCODED_CHARACTER;
  const percent = target.indexOf('%');
  if (percent === -1) return target;
  // Escapes in the query only (a search for `caf%C3%A9`): checked in place, the target served as is.
  if (mark !== -1 && percent > mark) return queryEscapeProblem(target, mark + 1, percent) ?? target;
  const path = normalizePath(mark === -1 ? target : target.slice(0, mark));
  if (path === null) return new TargetRefusal('The request path has a "%" that is not followed by two hexadecimal digits.');
  if (mark === -1) return path;
  return queryEscapeProblem(target, mark + 1, mark + 1) ?? path + target.slice(mark);
}

/** RFC 9110 §7.2 / RFC 3986 §3.2.2: `uri-host [ ":" port ]`, the host an IP literal, IPv4 or reg-name. */
const HOST_FIELD = /^(?:\[[0-9A-Fa-f:.]+\]|\[v[0-9A-Fa-f]+\.[A-Za-z0-9\-._~!$&'()*+,;=:]+\]|(?:[A-Za-z0-9\-._~!$&'()*+,;=]|%[0-9A-Fa-f]{2})*)(?::[0-9]*)?$/;

/** An absolute-form target's authority as a server's: a non-empty host, no userinfo, and a port of digits if any. */
function isServerAuthority(authority: string): boolean {
  return authority.length > 0 && authority.charCodeAt(0) !== COLON && HOST_FIELD.test(authority);
}

/**
 * Why a request's Host fields are refused, or null when they are fine: an HTTP/1.1 request needs
 * exactly one, and any request with one needs a valid value (RFC 9112 §3.2). `lastValid` remembers
 * the last accepted value, so a kept-alive client's repeated Host costs a string comparison.
 */
export function hostFieldProblem(rawHeaders: readonly string[], httpVersion: string, lastValid: { value: string }): string | null {
  let value: string | undefined;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (!isFieldName(rawHeaders[i]!, 'host')) continue;
    if (value !== undefined) return 'The request has more than one Host header field.';
    value = rawHeaders[i + 1]!;
  }
  if (value === undefined) return httpVersion === '1.0' ? null : 'An HTTP/1.1 request needs a Host header field.';
  if (value === lastValid.value) return null;
  if (!HOST_FIELD.test(value)) return 'The Host header field is not a valid host[:port].';
  lastValid.value = value;
  return null;
}
