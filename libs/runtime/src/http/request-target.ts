/**
 * The request line's target and the Host field, checked before any routing (RFC 9112 §3.2). Routes
 * match paths in origin-form (`/reviews.json?x`), so every other valid form is rewritten to it and
 * every invalid one is refused with a reason.
 */

/** Why a request target is refused with 400. A target that is served is returned as a plain string, allocating nothing. */
export class TargetRefusal {
  constructor(readonly message: string) {}
}

const ABSOLUTE_HTTP = /^https?:\/\/[^/?#]*/i;
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

const SLASH = 47;

/**
 * A path's normal form (RFC 3986 §6.2.2): unreserved characters decoded, so `/reviews%2Ejson` is
 * `/reviews.json`, and the other escapes in upper case.
 */
function normalizePath(path: string): string | null {
  // A `%` not followed by two hex digits is not a URI (RFC 3986 §2.1).
  if (/%(?![0-9A-Fa-f]{2})/.test(path)) return null;
  return decodeUnreservedEscapes(path).replace(PERCENT_TRIPLET, (escape) => escape.toUpperCase());
}

/**
 * The origin-form of a request target: origin-form as is (its path normalized when it holds
 * percent-encoding), absolute-form (`http://host/path?q`, which a server must accept) reduced to
 * its path and query, asterisk-form for OPTIONS only. A fragment is never part of a target.
 */
export function originForm(url: string, method: string | undefined): string | TargetRefusal {
  let target = url;
  if (target.charCodeAt(0) !== SLASH) {
    if (target === '*') return method === 'OPTIONS' ? target : new TargetRefusal('The target "*" is only valid for OPTIONS.');
    const authority = ABSOLUTE_HTTP.exec(target);
    if (authority === null) return new TargetRefusal('The request target must be a path or an absolute http(s) URI.');
    const rest = target.slice(authority[0].length);
    target = rest.charCodeAt(0) === SLASH ? rest : `/${rest}`;
  }
  if (target.includes('#')) return new TargetRefusal('The request target must not contain a fragment (#).');
  if (!target.includes('%')) return target;
  const mark = target.indexOf('?');
  const path = normalizePath(mark === -1 ? target : target.slice(0, mark));
  if (path === null) return new TargetRefusal('The request path has a "%" that is not followed by two hexadecimal digits.');
  return mark === -1 ? path : path + target.slice(mark);
}

/** RFC 9110 §7.2 / RFC 3986 §3.2.2: `uri-host [ ":" port ]`, the host an IP literal, IPv4 or reg-name. */
const HOST_FIELD = /^(?:\[[0-9A-Fa-f:.]+\]|\[v[0-9A-Fa-f]+\.[A-Za-z0-9\-._~!$&'()*+,;=:]+\]|(?:[A-Za-z0-9\-._~!$&'()*+,;=]|%[0-9A-Fa-f]{2})*)(?::[0-9]*)?$/;

const LOWER_CASE_BIT = 0x20;

/** `Host` in any letter case, compared without making a lower-cased copy of every header name. */
function isHostName(name: string): boolean {
  return (
    name.length === 4 &&
    (name.charCodeAt(0) | LOWER_CASE_BIT) === 104 &&
    (name.charCodeAt(1) | LOWER_CASE_BIT) === 111 &&
    (name.charCodeAt(2) | LOWER_CASE_BIT) === 115 &&
    (name.charCodeAt(3) | LOWER_CASE_BIT) === 116
  );
}

/**
 * Why a request's Host fields are refused, or null when they are fine: an HTTP/1.1 request needs
 * exactly one, and any request with one needs a valid value (RFC 9112 §3.2). `lastValid` remembers
 * the last accepted value, so a kept-alive client's repeated Host costs a string comparison.
 */
export function hostFieldProblem(rawHeaders: readonly string[], httpVersion: string, lastValid: { value: string }): string | null {
  let value: string | undefined;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (!isHostName(rawHeaders[i]!)) continue;
    if (value !== undefined) return 'The request has more than one Host header field.';
    value = rawHeaders[i + 1]!;
  }
  if (value === undefined) return httpVersion === '1.0' ? null : 'An HTTP/1.1 request needs a Host header field.';
  if (value === lastValid.value) return null;
  if (!HOST_FIELD.test(value)) return 'The Host header field is not a valid host[:port].';
  lastValid.value = value;
  return null;
}
