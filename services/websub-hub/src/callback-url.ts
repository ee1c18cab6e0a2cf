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
