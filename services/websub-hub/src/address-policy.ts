import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Whether an outbound request may reach this address: public unicast only. Loopback, RFC 1918,
 * link-local (cloud metadata), CGNAT, ULA, NAT64, 6to4/Teredo, documentation and reserved ranges
 * are all refused; an IPv4-mapped IPv6 address is judged by the IPv4 address it carries.
 */
export function isPublicAddress(address: string): boolean {
  const literal = stripBrackets(address);
  if (!ipaddr.isValid(literal)) return false;
  let ip = ipaddr.parse(literal);
  if (ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).isIPv4MappedAddress()) ip = (ip as ipaddr.IPv6).toIPv4Address();
  return ip.range() === 'unicast';
}

/** The IP literal a URL hostname spells (`[::1]` → `::1`), or null for a DNS name. */
export function ipLiteral(hostname: string): string | null {
  const host = stripBrackets(hostname);
  return isIP(host) === 0 ? null : host;
}

function stripBrackets(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}
