import { ipLiteral } from './address-policy.js';

/**
 * The address the per-client rate limit keys on. Each proxy adds the address that connected to it
 * as the last X-Forwarded-For entry, so with `trustedHops` proxies in front of the hub
 * (WEBSUB_TRUSTED_PROXY_HOPS) the client is the entry that many places from the right; everything
 * further left is whatever the client sent. With no trusted hops, a header too short to hold that
 * entry (the request did not come through every proxy) or an entry that is no IP address, it is the
 * connecting address: trusting the header otherwise would let a client that reaches the hub
 * directly pick a new identity per request.
 */
export function clientAddress(socketAddress: string | undefined, forwardedFor: string | readonly string[] | undefined, trustedHops: number): string {
  const peer = socketAddress ?? 'unknown';
  if (trustedHops === 0 || forwardedFor === undefined) return peer;
  // node:http joins repeated X-Forwarded-For fields with ", " already; the typings allow a list.
  const entries = (typeof forwardedFor === 'string' ? forwardedFor : forwardedFor.join(',')).split(',');
  const entry = entries.at(-trustedHops);
  return (entry === undefined ? null : ipLiteral(entry.trim())) ?? peer;
}
