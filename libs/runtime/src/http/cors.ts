import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * Public, credential-free API: any origin may read, and scripts may see the validators, the hub
 * Link, how long to wait (`Retry-After` on 429/503) or what to send instead (`Allow` on 405), and
 * whether and which bytes a range answer holds (`Accept-Ranges`, `Content-Range`), none of which the
 * Fetch standard lets a script read unless exposed. A flat `[name, value, ...]`
 * list, so the fast path can hand it to `res.writeHead` as is.
 */
export const CORS_HEADERS: readonly string[] = ['Access-Control-Allow-Origin', '*', 'Access-Control-Expose-Headers', 'ETag, Last-Modified, Link, Mcp-Session-Id, Retry-After, Allow, Accept-Ranges, Content-Range'];

export function setCorsHeaders(res: ServerResponse): void {
  for (let i = 0; i < CORS_HEADERS.length; i += 2) res.setHeader(CORS_HEADERS[i]!, CORS_HEADERS[i + 1]!);
}

const HEADER_NAME_LIST = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+(\s*,\s*[!#$%&'*+.^_`|~0-9A-Za-z-]+)*$/;

/**
 * The headers a preflight asks leave to send, when they are a well-formed list of header names. Nothing
 * here is secret (no cookies, Authorization is ignored), so any may be sent: a page's tracing adds
 * `traceparent`, its framework an `X-Request-Id`.
 */
export function requestedHeaders(req: IncomingMessage): string | undefined {
  const requested = req.headers['access-control-request-headers'];
  return requested && HEADER_NAME_LIST.test(requested) ? requested : undefined;
}

/** Answers a CORS preflight (OPTIONS) with 204 for the given methods. */
export function sendPreflight(req: IncomingMessage, res: ServerResponse, methods: string): void {
  res.statusCode = 204;
  setCorsHeaders(res);
  res.setHeader('Access-Control-Allow-Methods', methods);
  const requested = requestedHeaders(req);
  if (requested !== undefined) res.setHeader('Access-Control-Allow-Headers', requested);
  res.setHeader('Access-Control-Max-Age', '86400');
  res.setHeader('Allow', methods);
  res.end();
}
