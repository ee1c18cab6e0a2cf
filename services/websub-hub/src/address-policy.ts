import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { ipLiteral } from '@reviews/runtime';

/**
 * IANA allocates public IPv6 unicast from 2000::/3 only. Everything else that ipaddr.js has no range
 * for (IPv4-compatible ::/96, deprecated by RFC 4291; unallocated space) is no public address either.
 */
export const IPV6_GLOBAL_UNICAST = '2000::/3';
const globalUnicast = ipaddr.IPv6.parseCIDR(IPV6_GLOBAL_UNICAST);

/**
 * Whether an outbound request may reach this address: public unicast only. Loopback, RFC 1918,
 * link-local (cloud metadata), CGNAT, ULA, NAT64, 6to4/Teredo, documentation and reserved ranges
 * are all refused, and IPv6 outside global unicast; an IPv4-mapped IPv6 address is judged by the
 * IPv4 address it carries.
 */
export function isPublicAddress(address: string): boolean {
  // A DNS name is no address: isIP('') is 0.
  const literal = ipLiteral(address) ?? '';
  switch (isIP(literal)) {
    case 4:
      return ipaddr.IPv4.parse(literal).range() === 'unicast';
    case 6: {
      const canonical = canonicalIpv6(literal);
      if (canonical === null) return false;
      const ip = ipaddr.IPv6.parse(canonical);
      if (ip.isIPv4MappedAddress()) return ip.toIPv4Address().range() === 'unicast';
      return ip.match(globalUnicast) && ip.range() === 'unicast';
    }
    default:
      return false;
  }
}

/**
 * The address in hex groups only, or null (a zone id: link-local anyway). ipaddr.js reads any
 * dotted tail as IPv4-mapped, so `::8.8.8.8` (IPv4-compatible, the way Node prints such a resolved
 * address) would pass for 8.8.8.8; the WHATWG serialiser never writes a dotted tail.
 */
function canonicalIpv6(literal: string): string | null {
  try {
    return ipLiteral(new URL(`http://[${literal}]/`).hostname);
  } catch {
    return null;
  }
}
