import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { CORS_HEADERS, setCorsHeaders } from './cors.js';
import { READ_METHODS, sendError } from './errors.js';
import { hostFieldProblem, originForm, TargetRefusal } from './request-target.js';

export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void;

/** Longest request target served; longer ones get 414 before any routing. */
export const MAX_URL_LENGTH = 8 * 1024;

type ClientError = readonly [status: number, reason: string, code: string, message: string];

const CLIENT_ERRORS: Record<string, ClientError> = {
  HPE_HEADER_OVERFLOW: [431, 'Request Header Fields Too Large', 'headers_too_large', 'The request headers exceed 16 KiB.'],
  HPE_INVALID_METHOD: [501, 'Not Implemented', 'not_implemented', 'The request method is not one this server implements.'],
  HPE_INVALID_VERSION: [505, 'HTTP Version Not Supported', 'http_version_not_supported', 'Only HTTP/1.0 and HTTP/1.1 are served.'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request Timeout', 'request_timeout', 'The request took too long to arrive.'],
  default: [400, 'Bad Request', 'bad_request', 'The request could not be parsed.'],
};
const URI_TOO_LONG_MESSAGE = `The request target exceeds ${MAX_URL_LENGTH} characters.`;
const URI_TOO_LONG: ClientError = [414, 'URI Too Long', 'uri_too_long', URI_TOO_LONG_MESSAGE];
const NOT_A_PROXY: ClientError = [501, 'Not Implemented', 'not_implemented', 'CONNECT is not implemented: this is an origin server, not a proxy.'];

/**
 * The header block overflowed on the request line itself (`METHOD <target>` with no line end in
 * sight): the target is what is too long, which is 414, not 431.
 */
function overflowedOnTarget(packet: Buffer | undefined): boolean {
  if (packet === undefined) return false;
  const lineEnd = packet.indexOf('\r\n');
  return /^[A-Z]+ /.test(packet.toString('latin1', 0, 16)) && (lineEnd === -1 || lineEnd > MAX_URL_LENGTH);
}

/**
 * A response written on the raw socket, for requests node:http refuses before there is a response
 * object: the same JSON envelope, Date and CORS headers as every other error (RFC 9110 §6.6.1).
 */
function rawErrorResponse([status, reason, code, message]: ClientError): string {
  const body = JSON.stringify({ error: code, message });
  const cors = CORS_HEADERS.map((part, i) => (i % 2 === 0 ? `${part}: ` : `${part}\r\n`)).join('');
  return `HTTP/1.1 ${status} ${reason}\r\nDate: ${new Date().toUTCString()}\r\n${cors}Cache-Control: no-store\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}

/**
 * node:http with limits suited to a public, read-only API: small headers, bounded time to send
 * them and the request, keep-alive longer than typical load-balancer idle timeouts. The request
 * target and Host are checked here, once for every service (request-target.ts): routes see only
 * origin-form targets. `allow` is what `OPTIONS *` lists: the methods some resource of this server
 * supports. The read API and every service's probes take GET, HEAD and OPTIONS; a service that
 * also takes POST (MCP, the WebSub hub, standalone) passes its own list.
 */
export function createHttpServer(handler: RequestHandler, observeRefused?: RequestHandler, allow: string = READ_METHODS): Server {
  const lastValidHost = { value: '' };
  // Refusals here never reach a route; they are still requests an operator should see.
  const refuse = (req: IncomingMessage, res: ServerResponse, status: number, error: string, message: string): void => {
    observeRefused?.(req, res);
    sendError(res, status, error, message);
  };
  const server = createServer(
    {
      maxHeaderSize: 16 * 1024,
      headersTimeout: 10_000,
      requestTimeout: 30_000,
      keepAliveTimeout: 65_000,
      // Checked by hostFieldProblem, which answers with the JSON envelope like every other 400.
      requireHostHeader: false,
    },
    (req, res) => {
      const url = req.url ?? '/';
      if (url.length > MAX_URL_LENGTH) {
        refuse(req, res, 414, 'uri_too_long', URI_TOO_LONG_MESSAGE);
        return;
      }
      const hostProblem = hostFieldProblem(req.rawHeaders, req.httpVersion, lastValidHost);
      if (hostProblem !== null) {
        refuse(req, res, 400, 'bad_request', hostProblem);
        return;
      }
      const target = originForm(url, req.method);
      if (target instanceof TargetRefusal) {
        refuse(req, res, 400, 'bad_request', target.message);
        return;
      }
      if (target === '*') {
        // `OPTIONS *` asks about the server as a whole (RFC 9110 §9.3.7): no resource to route to,
        // and a success should name the server's optional features, such as the methods it allows.
        res.statusCode = 204;
        setCorsHeaders(res);
        res.setHeader('Allow', allow);
        res.end();
        return;
      }
      req.url = target;
      handler(req, res);
    },
  );
  // Requests node:http refuses before routing (malformed, oversized headers, too slow) still get the
  // JSON envelope instead of Node's bare status line.
  server.on('clientError', (error: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket) => {
    if (!socket.writable) return;
    const known = error.code === 'HPE_HEADER_OVERFLOW' && overflowedOnTarget(error.rawPacket) ? URI_TOO_LONG : CLIENT_ERRORS[error.code ?? ''];
    socket.end(rawErrorResponse(known ?? CLIENT_ERRORS.default!));
  });
  // Without a listener node:http drops a CONNECT request's socket without a word.
  server.on('connect', (_req, socket: Duplex) => {
    if (socket.writable) socket.end(rawErrorResponse(NOT_A_PROXY));
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
