import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * The client's address (clientKey turns it into the rate limit's key). Each proxy adds the address
 * that connected to it as the last X-Forwarded-For entry, so with `trustedHops` proxies in front of
 * the service (WEBSUB_TRUSTED_PROXY_HOPS, MCP_TRUSTED_PROXY_HOPS) the client is the entry that many places from the right; everything
 * further left is whatever the client sent. With no trusted hops, a header too short to hold that
 * entry (the request did not come through every proxy) or an entry that is no IP address, it is the
 * connecting address: trusting the header otherwise would let a client that reaches the service
 * directly pick a new identity per request.
 */
function clientAddress(socketAddress: string | undefined, forwardedFor: string | readonly string[] | undefined, trustedHops: number): string {
  const peer = socketAddress ?? 'unknown';
  if (trustedHops === 0 || forwardedFor === undefined) return peer;
  // node:http joins repeated X-Forwarded-For fields with ", " already; the typings allow a list.
  const entries = (typeof forwardedFor === 'string' ? forwardedFor : forwardedFor.join(',')).split(',');
  const entry = entries.at(-trustedHops);
  return (entry === undefined ? null : ipLiteral(entry.trim())) ?? peer;
}

/** The IP literal a URL hostname spells (`[::1]` → `::1`), or null for a DNS name. */
export function ipLiteral(hostname: string): string | null {
  const host = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return isIP(host) === 0 ? null : host;
}

/**
 * What the per-client rate limit keys on: an IPv4 address as is (also written IPv4-mapped, as a
 * dual-stack socket reports it), an IPv6 address by its /64. A subscriber is usually given a whole
 * /64 (SLAAC, privacy addresses), so keying on the full address would let it take a fresh one per
 * request.
 */
function clientKey(address: string): string {
  if (!ipaddr.IPv6.isValid(address)) return address;
  const ip = ipaddr.IPv6.parse(address);
  if (ip.isIPv4MappedAddress()) return ip.toIPv4Address().toString();
  return `${new ipaddr.IPv6([...ip.parts.slice(0, 4), 0, 0, 0, 0]).toString()}/64`;
}

/** What a request is rate-limited by: its client (behind `trustedHops` proxies) as clientKey keys it. */
export function requesterKey(req: IncomingMessage, trustedHops: number): string {
  return clientKey(clientAddress(req.socket.remoteAddress, req.headers['x-forwarded-for'], trustedHops));
}
