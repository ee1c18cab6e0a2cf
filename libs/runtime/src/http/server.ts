import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { sendError } from './errors.js';

export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void;

/** Longest request target served; longer ones get 414 before any routing. */
export const MAX_URL_LENGTH = 8 * 1024;

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
  // The request line and headers must arrive within headersTimeout; a stuck socket is dropped.
  server.on('clientError', (error: NodeJS.ErrnoException, socket) => {
    if (!socket.writable) return;
    const status = error.code === 'HPE_HEADER_OVERFLOW' ? 431 : 400;
    const body = JSON.stringify({ error: status === 431 ? 'headers_too_large' : 'bad_request', message: 'The request could not be parsed.' });
    socket.end(`HTTP/1.1 ${status} ${status === 431 ? 'Request Header Fields Too Large' : 'Bad Request'}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  });
  return server;
}

/** Path and raw query of a request target, without decoding (decoding belongs to the route). */
export function splitTarget(url: string | undefined): { path: string; query: string } {
  const target = url ?? '/';
  const mark = target.indexOf('?');
  return mark === -1 ? { path: target, query: '' } : { path: target.slice(0, mark), query: target.slice(mark + 1) };
}
