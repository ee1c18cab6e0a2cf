import { domainToASCII, domainToUnicode } from 'node:url';

/** RFC 1123 §2.1 host name label: letters, digits and hyphens, 1–63 of them, no hyphen at either end. */
const LDH_LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
const MAX_NAME_LENGTH = 253;

const LOCALHOST = /(^|\.)localhost\.?$/i;

/** RFC 6761 §6.3: `localhost` and the names under it are loopback, whatever a DNS server says of them. */
export function isLocalhostName(hostname: string): boolean {
  return LOCALHOST.test(hostname);
}

/** A fully qualified name (`example.com.`) as the same name without its root dot. */
export function withoutTrailingDot(hostname: string): string {
  return hostname.endsWith('.') ? hostname.slice(0, -1) : hostname;
}

/**
 * Whether a WHATWG-parsed hostname (lower case, IDNs already in punycode) is a DNS name a callback
 * can be reached at. The URL parser takes more (`a..b`, `-a`, `_`, `xn--` labels that decode to
 * nothing), and a name no resolver will answer for would only fail at verification, after a 202.
 * A trailing dot (fully qualified) is allowed.
 */
export function isDnsName(hostname: string): boolean {
  const name = withoutTrailingDot(hostname);
  if (name.length > MAX_NAME_LENGTH) return false;
  return name.split('.').every((label) => LDH_LABEL.test(label) && (!label.startsWith('xn--') || isPunycode(label)));
}

/** An `xn--` label is an IDN only if it decodes, and back to the same label (RFC 5891 §5.4). */
function isPunycode(label: string): boolean {
  const unicode = domainToUnicode(label);
  return unicode !== label && domainToASCII(unicode) === label;
}
