import { withoutTrailingDot } from './host-name.js';

/**
 * Append hub parameters to a callback URL by concatenation (W3C WebSub §5.1.1): the subscriber's
 * own query is kept byte for byte, and a parameter it already carries (even `hub.challenge`) is
 * not overwritten. `URL.searchParams` would re-serialise or overwrite it.
 */
export function withHubParams(callback: string, params: Record<string, string>): string {
  const query = new URLSearchParams(params).toString();
  if (!callback.includes('?')) return `${callback}?${query}`;
  return callback.endsWith('?') || callback.endsWith('&') ? `${callback}${query}` : `${callback}&${query}`;
}

/**
 * What the per-callback-host rate limit keys on: the host alone, as the URL parser writes its
 * `hostname` (lower case, IDNs in punycode, one spelling per IP address), without a trailing dot.
 * Another port or spelling of the same host must not open a fresh budget.
 */
export function callbackHostKey(hostname: string): string {
  return withoutTrailingDot(hostname);
}
