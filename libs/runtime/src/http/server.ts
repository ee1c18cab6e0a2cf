import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { sendError } from './errors.js';

export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void;

/** Longest request target served; longer ones get 414 before any routing. */
export const MAX_URL_LENGTH = 8 * 1024;

const CLIENT_ERRORS: Record<string, [number, string, string, string]> = {
  HPE_HEADER_OVERFLOW: [431, 'Request Header Fields Too Large', 'headers_too_large', 'The request headers exceed 16 KiB.'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request Timeout', 'request_timeout', 'The request took too long to arrive.'],
  default: [400, 'Bad Request', 'bad_request', 'The request could not be parsed.'],
};

/**
 * node:http with limits suited to a public, read-only API: small headers, bounded time to send
 * them and the request, keep-alive longer than typical load-balancer idle timeouts.
 */
export function createHttpServer(handler: RequestHandler): Server {
  const server = createServer(
    {
      maxHeaderSize: 16 * 1024,
      headersTimeout: 10_000,
      requestTimeout: 30_000,
      keepAliveTimeout: 65_000,
    },
    (req, res) => {
      if ((req.url ?? '').length > MAX_URL_LENGTH) {
        sendError(res, 414, 'uri_too_long', `The request target exceeds ${MAX_URL_LENGTH} characters.`);
        return;
      }
      handler(req, res);
    },
  );
  // Requests node:http refuses before routing (malformed, oversized headers, too slow) still get the
  // JSON envelope instead of Node's bare status line.
  server.on('clientError', (error: NodeJS.ErrnoException, socket) => {
    if (!socket.writable) return;
    const [status, reason, code, message] = CLIENT_ERRORS[error.code ?? ''] ?? CLIENT_ERRORS.default!;
    const body = JSON.stringify({ error: code, message });
    socket.end(`HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  });
  return server;
}

/** Path of a request target, without decoding; allocates nothing for a target without a query. */
export function pathOf(url: string | undefined): string {
  if (url === undefined) return '/';
  const mark = url.indexOf('?');
  return mark === -1 ? url : url.slice(0, mark);
}

/** Path and raw query of a request target, without decoding (decoding belongs to the route). */
export function splitTarget(url: string | undefined): { path: string; query: string } {
  const target = url ?? '/';
  const mark = target.indexOf('?');
  return mark === -1 ? { path: target, query: '' } : { path: target.slice(0, mark), query: target.slice(mark + 1) };
}
