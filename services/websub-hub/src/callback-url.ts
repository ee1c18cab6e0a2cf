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

/** Percent-escapes of RFC 3986 unreserved characters are decoded before URLs are compared or keyed (§5.1.1). */
export function decodeUnreservedEscapes(url: string): string {
  return url.replace(/%([0-9A-Fa-f]{2})/g, (escape, hex: string) => {
    const char = String.fromCharCode(parseInt(hex, 16));
    return /[A-Za-z0-9\-._~]/.test(char) ? char : escape;
  });
}
