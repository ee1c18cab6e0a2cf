import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { MAX_HEADER_BYTES, MAX_REQUEST_TARGET_LENGTH, type Issue } from '@reviews/domain';
import { CORS_HEADERS, setCorsHeaders } from './cors.js';
import { READ_METHODS, sendError } from './errors.js';
import { lingerWhenClosed } from './lingering-close.js';
import { hostFieldProblem, originForm, TargetRefusal } from './request-target.js';

export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void;

type ClientError = readonly [status: number, reason: string, code: string, message: string];

const VERSION_NOT_SERVED_MESSAGE = 'Only HTTP/1.0 and HTTP/1.1 are served.';

const CLIENT_ERRORS: Record<string, ClientError> = {
  HPE_HEADER_OVERFLOW: [431, 'Request Header Fields Too Large', 'headers_too_large', 'The request headers exceed 16 KiB.'],
  HPE_INVALID_METHOD: [501, 'Not Implemented', 'not_implemented', 'The request method is not one this server implements.'],
  HPE_INVALID_VERSION: [505, 'HTTP Version Not Supported', 'http_version_not_supported', VERSION_NOT_SERVED_MESSAGE],
  // The connection preface of an HTTP/2 client with prior knowledge (h2c, RFC 9113 §3.3): HTTP/2.0 over a plain
  // connection like any other such request line, which llhttp stops at as a protocol it does not parse.
  HPE_PAUSED_H2_UPGRADE: [505, 'HTTP Version Not Supported', 'http_version_not_supported', VERSION_NOT_SERVED_MESSAGE],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request Timeout', 'request_timeout', 'The request took too long to arrive.'],
  default: [400, 'Bad Request', 'bad_request', 'The request could not be parsed.'],
};
const MALFORMED_REQUEST_LINE: ClientError = [400, 'Bad Request', 'bad_request', 'The request line is malformed: expected `METHOD target HTTP/1.1` ending in CRLF.'];
/** RFC 9112 §6.1: without chunked as the final coding a request's body length cannot be known. */
const CHUNKED_LAST = /(?:^|,)[\t ]*chunked[\t ]*$/i;
const CHUNKED_ONLY = /^[\t ]*chunked[\t ]*$/i;

/**
 * Why a request's Transfer-Encoding is refused, or null for plain `chunked`, the one coding served.
 * Every refusal closes the connection: the body that follows cannot be read, or (HTTP/1.0) its
 * framing must be treated as faulty, which is how requests are smuggled past a proxy that frames it
 * differently.
 */
function transferCodingRefusal(transferEncoding: string, httpVersionMinor: number): ClientError | null {
  if (httpVersionMinor === 0) return [400, 'Bad Request', 'bad_request', 'An HTTP/1.0 request cannot carry Transfer-Encoding (RFC 9112 §6.1): its framing is treated as faulty.'];
  if (!CHUNKED_LAST.test(transferEncoding)) return [400, 'Bad Request', 'bad_request', 'Transfer-Encoding must end in chunked (RFC 9112 §6.1): the length of this request cannot be determined.'];
  if (!CHUNKED_ONLY.test(transferEncoding)) return [501, 'Not Implemented', 'not_implemented', 'Only the chunked transfer coding is implemented (RFC 9112 §6.1).'];
  return null;
}
const URI_TOO_LONG_MESSAGE = `The request target exceeds ${MAX_REQUEST_TARGET_LENGTH} characters.`;
const URI_TOO_LONG: ClientError = [414, 'URI Too Long', 'uri_too_long', URI_TOO_LONG_MESSAGE];
const NOT_A_PROXY: ClientError = [501, 'Not Implemented', 'not_implemented', 'CONNECT is not implemented: this is an origin server, not a proxy.'];

/**
 * The header block overflowed on the request line itself (`METHOD <target>` with no line end in
 * sight): the target is what is too long, which is 414, not 431.
 */
function overflowedOnTarget(packet: Buffer | undefined): boolean {
  if (packet === undefined) return false;
  const lineEnd = packet.indexOf('\r\n');
  return /^[A-Z]+ /.test(packet.toString('latin1', 0, 16)) && (lineEnd === -1 || lineEnd > MAX_REQUEST_TARGET_LENGTH);
}

/**
 * node:http reports every unparsable request line as an invalid version. Only a well-formed line
 * naming a version it does not take (HTTP/1.2, HTTP/3.0) is a 505 (RFC 9110 §15.6.6); a line
 * ending in a bare LF, or missing its version, is a malformed request (400).
 */
function namesAnotherVersion(packet: Buffer | undefined): boolean {
  if (packet === undefined) return false;
  const lineEnd = packet.indexOf('\n');
  return lineEnd !== -1 && /^[!#$%&'*+.^_`|~0-9A-Za-z-]+ \S+ HTTP\/\d\.\d\r$/.test(packet.toString('latin1', 0, lineEnd));
}

function clientErrorFor(error: NodeJS.ErrnoException & { rawPacket?: Buffer }): ClientError {
  if (error.code === 'HPE_HEADER_OVERFLOW' && overflowedOnTarget(error.rawPacket)) return URI_TOO_LONG;
  if (error.code === 'HPE_INVALID_VERSION' && !namesAnotherVersion(error.rawPacket)) return MALFORMED_REQUEST_LINE;
  return CLIENT_ERRORS[error.code ?? ''] ?? CLIENT_ERRORS.default!;
}

/**
 * A response written on the raw socket, for requests node:http refuses before there is a response
 * object: the same JSON envelope, Date and CORS headers as every other error (RFC 9110 §6.6.1). A
 * HEAD request gets the same header section without the body (RFC 9110 §9.3.2). A request not known
 * to be a HEAD or not (`head` undefined) gets no content at all, as it may be one.
 */
function rawErrorResponse([status, reason, code, message]: ClientError, head: boolean | undefined): string {
  const body = head === undefined ? '' : JSON.stringify({ error: code, message });
  const cors = CORS_HEADERS.map((part, i) => (i % 2 === 0 ? `${part}: ` : `${part}\r\n`)).join('');
  const type = body === '' ? '' : 'Content-Type: application/json\r\n';
  const header = `HTTP/1.1 ${status} ${reason}\r\nDate: ${new Date().toUTCString()}\r\n${cors}Cache-Control: no-store\r\n${type}Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n`;
  return head === true ? header : header + body;
}

/** Whether the bytes node:http refused start a HEAD request; undefined without them. */
function isHeadRequest(packet: Buffer | undefined): boolean | undefined {
  return packet === undefined ? undefined : packet.toString('latin1', 0, 5) === 'HEAD ';
}

const EXPECTATION_FAILED_MESSAGE = 'Only "Expect: 100-continue" is understood.';

/** The members of the Expect field, lower-cased: a list, whose empty elements are none (RFC 9110 §5.6.1). */
function expectations(req: IncomingMessage): string[] {
  return (req.headers.expect ?? '')
    .split(',')
    .map((member) => member.trim().toLowerCase())
    .filter((member) => member !== '');
}

/**
 * Whether the request expects the one expectation RFC 9110 §10.1.1 defines, `100-continue`, without
 * parameters, and nothing else: a field sent twice (node:http joins the lines) is the same expectation.
 */
function expectsContinue(req: IncomingMessage): boolean {
  const members = expectations(req);
  return members.length > 0 && members.every((member) => member === '100-continue');
}

/**
 * Sends `100 Continue` when the handler first reads the body, not before it runs, as node:http does:
 * a request refused on its headers alone (a declared length over a limit, a rate limit) gets its
 * final answer without being invited to send a body that would only be dropped.
 */
function continueOnFirstRead(req: IncomingMessage, res: ServerResponse): void {
  const read = req._read;
  req._read = function (size: number) {
    req._read = read;
    if (!res.headersSent) res.writeContinue();
    read.call(this, size);
  };
}

/**
 * What a service tells the server beyond its handler. Refusals here never reach a route; they are
 * still requests an operator should see.
 */
export interface HttpServerOptions {
  /** Sees each request refused after parsing (414, a malformed target or Host, framing, version). */
  readonly observeRefused?: RequestHandler;
  /** Sees the status of each request node:http could not parse (400, 408, 431, 501, 505…): there is no request object. */
  readonly observeUnparsed?: (status: number) => void;
  /**
   * What `OPTIONS *` lists: the methods some resource of this server supports. The read API and
   * every service's probes take GET, HEAD and OPTIONS; a service that also takes POST (MCP, the
   * WebSub hub, standalone) passes its own list.
   */
  readonly allow?: string;
  /** How long a connection may make no progress before it is closed; tests shorten it. */
  readonly stalledConnectionTimeoutMs?: number;
}

/**
 * A connection that takes no bytes for this long is closed: a client that stops reading would
 * otherwise hold its response's buffers (MBs for an MCP batch) for as long as it likes. node:http
 * sees progress when a write completes to the kernel, in jumps of the socket buffer (~1 MB on
 * loopback), so a client reading slower than ~20 KB/s loses a large body. As long as the keep-alive
 * timeout, which an idle connection between requests keeps.
 */
const STALLED_CONNECTION_TIMEOUT_MS = 65_000;

/** How long a connection closed with requests unread stays open after its last answer, for the client to read it. */
const UNREAD_CLOSE_DELAY_MS = 1_000;

/**
 * Ends a connection whose client may still have requests unread on it: the write side now, the rest a
 * moment later. Destroyed at once with bytes unread, the kernel resets it, and a client that has not
 * yet read the last answer loses it.
 */
function closeUnread(socket: Duplex): void {
  socket.end();
  const later = setTimeout(() => socket.destroy(), UNREAD_CLOSE_DELAY_MS);
  socket.once('close', () => clearTimeout(later));
}

/**
 * node:http ends a `Connection: close` answer with socket.destroySoon(), which destroys the connection once the
 * answer is handed to the kernel; for this request's connection it is closeUnread instead, as its client may
 * have pipelined requests behind it (destroyed with them unread, a 16 MiB answer lost its last 3 to 4 MiB to
 * the reset). A body of the request still arriving is read and dropped in stages first (lingerWhenClosed).
 */
function closeUnreadWhenClosed(req: IncomingMessage): void {
  const { socket } = req;
  // Replaced, not wrapped: the first thing done with a request (takesRequest), before anything makes it linger.
  socket.destroySoon = () => closeUnread(socket);
  lingerWhenClosed(req);
}

/** The response a connection is serving: node:http's own field, the one its closeIdleConnections reads. */
export function responseOf(socket: Duplex): ServerResponse | null | undefined {
  return (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
}

/** Requests one connection may queue behind the one being answered; no client pipelines that deep. */
const MAX_WAITING_REQUESTS = 128;

/**
 * node:http with limits suited to a public, read-only API: small headers, bounded time to send
 * them and the request, keep-alive longer than typical load-balancer idle timeouts. The request
 * target and Host are checked here, once for every service (request-target.ts): routes see only
 * origin-form targets.
 */
export function createHttpServer(
  handler: RequestHandler,
  { observeRefused, observeUnparsed, allow = READ_METHODS, stalledConnectionTimeoutMs = STALLED_CONNECTION_TIMEOUT_MS }: HttpServerOptions = {},
): Server {
  const lastValidHost = { value: '' };
  /** Connections whose request was refused here for its framing: the parser's own error on it comes too, and must not answer twice. */
  const framingRefused = new WeakSet<Duplex>();
  /** Requests asking to switch protocols, as node:http's parser reads them (`Upgrade`, named in `Connection`): see takesRequest. */
  const upgradeAsked = new WeakSet<IncomingMessage>();
  /** The last request a connection takes: one asking to upgrade. */
  const lastRequestOf = new WeakMap<Duplex, IncomingMessage>();
  const refuse = (req: IncomingMessage, res: ServerResponse, status: number, error: string, message: string, issues?: readonly Issue[]): void => {
    observeRefused?.(req, res);
    sendError(res, status, error, message, issues === undefined ? {} : { issues });
  };
  const server = createServer(
    {
      maxHeaderSize: MAX_HEADER_BYTES,
      headersTimeout: 10_000,
      requestTimeout: 30_000,
      keepAliveTimeout: 65_000,
      // How often the two timeouts above are checked; at Node's default of 30 s a request could take 40 s
      // to send its headers and 60 s to send itself (an audit measured both).
      connectionsCheckingInterval: 1_000,
      // Checked by hostFieldProblem, which answers with the JSON envelope like every other 400.
      requireHostHeader: false,
      // No other protocol is served: every upgrade is declined, and the request answered as its last (takesRequest).
      shouldUpgradeCallback: (req) => {
        upgradeAsked.add(req);
        return false;
      },
    },
    dispatch,
  );
  /**
   * Whether the connection takes this request, called as each is parsed. A request asking to upgrade is
   * served over HTTP/1.1 (RFC 9110 §7.8), but node:http's parser still stops after it as if the protocol
   * had switched, and drops what else the same read brought: a request pipelined behind it went
   * unanswered and the connection stayed open (the security audit). So its answer closes the connection
   * (`Connection: close`), and nothing parsed after it is served: parsing resumes at the next read, which
   * may begin inside a request, in bytes a proxy in front took as a body. The client sends the requests
   * behind it again (RFC 9112 §9.3.2).
   */
  function takesRequest(req: IncomingMessage, res: ServerResponse): boolean {
    const last = lastRequestOf.get(req.socket);
    if (last === req) return true;
    if (last !== undefined) {
      // Nothing more is read: parsed, such requests came as fast as a client wrote them (131,000 and 400 MB
      // in 2.5 s while the answer was pending). Paused once node:http is done with this read, as it resumes
      // the connection at the end of each request it parses.
      const { socket } = req;
      process.nextTick(() => socket.pause());
      return false;
    }
    if (upgradeAsked.has(req)) {
      lastRequestOf.set(req.socket, req);
      res.setHeader('Connection', 'close');
      closeUnreadWhenClosed(req);
    }
    return true;
  }
  function dispatch(req: IncomingMessage, res: ServerResponse): void {
    if (takesRequest(req, res)) inTurn(req, res);
  }
  /** Served now, or once the answers ahead of it on its connection have gone out. */
  function inTurn(req: IncomingMessage, res: ServerResponse): void {
    if (res.socket === null) awaitTurn(req, res);
    else serve(req, res);
  }
  /** Requests of a connection waiting for their turn. */
  const waiting = new WeakMap<Duplex, number>();
  /** Connections that queued too many requests: the answer being sent is their last. */
  const dropping = new WeakSet<Duplex>();
  /** Connections whose parser failed: they take no further request. */
  const refusing = new WeakSet<Duplex>();
  /**
   * Calls `then` once the connection's answer being sent has been handed to the kernel, and with
   * `waitingToo` once those of the requests waiting behind it have been too; at once if there are none.
   */
  function whenAnswered(socket: Duplex, then: () => void, waitingToo: boolean): void {
    const answer = responseOf(socket);
    if (answer) answer.once('close', () => (waitingToo ? whenAnswered(socket, then, true) : then()));
    else then();
  }
  /**
   * A pipelined request waits for its turn: node:http runs every request a connection sends at once
   * and keeps each answer until those before it are sent, so a client that writes many and reads
   * none had the server compute and hold them all (the complexity audit: 40 since-queries in one
   * 2 KB write cost 4.9 s of CPU and 337 MB). Its response gets the socket when the one before it has
   * been handed to the OS. Meanwhile the connection is not read (node:http pauses it only for output
   * it holds, which a waiting request has none of: the review saw 440,000 small requests parsed and
   * 760 MB held in 8 s); one read may still bring hundreds, so a connection queuing more than
   * MAX_WAITING_REQUESTS is closed once the answer being sent has gone out.
   */
  function awaitTurn(req: IncomingMessage, res: ServerResponse): void {
    const { socket } = req;
    if (dropping.has(socket)) return;
    const count = (waiting.get(socket) ?? 0) + 1;
    if (count > MAX_WAITING_REQUESTS) {
      // The requests waiting go unanswered, as a client that pipelines must expect (RFC 9112 §9.3.2);
      // the answer being sent is finished first. Nothing more is read meanwhile.
      dropping.add(socket);
      process.nextTick(() => socket.pause());
      whenAnswered(socket, () => closeUnread(socket), false);
      return;
    }
    waiting.set(socket, count);
    // Once node:http is done with this read: it dispatches a request before it is complete, and resumes the
    // connection after each one it parses, so a pause here never held (266,000 requests parsed and 600 MB
    // held in 2.5 s). Not while its own body is still coming: it would wait unread, and node:http's request
    // timeout end the connection with a 408 in place of the answer ahead of it (the fourth review). No
    // request after it can be parsed before that body ends anyway.
    process.nextTick(() => {
      if (req.complete && (waiting.get(socket) ?? 0) > 0) socket.pause();
    });
    res.once('socket', () => {
      if (dropping.has(socket)) return;
      const left = (waiting.get(socket) ?? 1) - 1;
      waiting.set(socket, left);
      if (left === 0) socket.resume();
      serve(req, res);
    });
  }
  function serve(req: IncomingMessage, res: ServerResponse): void {
    // node:http goes on parsing what follows a request refused for its framing, as requests of the
    // same connection; they came in a body this server could not delimit (smuggled), so they are
    // never served, and the connection closes after the refusal.
    if (framingRefused.has(req.socket)) return;
    // llhttp takes HTTP/2.0 and a version-less (HTTP/0.9) line as requests.
    if (req.httpVersionMajor !== 1) {
      refuse(req, res, 505, 'http_version_not_supported', VERSION_NOT_SERVED_MESSAGE);
      return;
    }
    const transferEncoding = req.headers['transfer-encoding'];
    const framingRefusal = transferEncoding === undefined ? null : transferCodingRefusal(transferEncoding, req.httpVersionMinor);
    if (framingRefusal !== null) {
      framingRefused.add(req.socket);
      res.setHeader('Connection', 'close');
      refuse(req, res, framingRefusal[0], framingRefusal[2], framingRefusal[3]);
      return;
    }
    const url = req.url ?? '/';
    if (url.length > MAX_REQUEST_TARGET_LENGTH) {
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
      refuse(req, res, 400, 'bad_request', target.message, target.issues);
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
  }
  // Without a 'timeout' listener node:http destroys the socket, and with it the response it could not send.
  server.setTimeout(stalledConnectionTimeoutMs);
  // Requests node:http refuses before routing (malformed, oversized headers, too slow) still get the
  // JSON envelope instead of Node's bare status line.
  server.on('clientError', (error: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket: Duplex) => {
    if (!socket.writable) return;
    if (framingRefused.has(socket)) {
      socket.end();
      return;
    }
    // The parser stops at its first error, but more bytes of the connection may bring this event again.
    if (refusing.has(socket)) return;
    refusing.add(socket);
    const inFlight = responseOf(socket);
    // The requests before the refused one are answered first, in order, and the connection then closes
    // without an answer to it, which its client sends again (RFC 9112 §9.3.2): destroyed at once, an
    // answer being sent was cut short under its Content-Length (an audit: 2.8 MB of an 11 MB
    // /reviews.json, then a FIN). Not refused in words: the bytes node:http passes start with the first
    // request of the read, not the refused one, so they cannot tell a HEAD, nor which limit it broke.
    if ((waiting.get(socket) ?? 0) > 0 || inFlight?.req.complete === true) {
      whenAnswered(socket, () => closeUnread(socket), true);
      return;
    }
    const refusal = clientErrorFor(error);
    observeUnparsed?.(refusal[0]);
    // The request in flight is the refused one (its body malformed, or too slow to arrive): the refusal
    // is its answer, unless it has begun another. Without one, the refused request is the one whose bytes
    // node:http passes, or, timed out before its header section was complete, one whose method nothing
    // tells: node:http's parser keeps the bytes it has read of it, out of reach.
    if (inFlight?.headersSent === true) socket.destroy();
    else socket.end(rawErrorResponse(refusal, inFlight ? inFlight.req.method === 'HEAD' : isHeadRequest(error.rawPacket)));
  });
  // node:http takes 100-continue anywhere in the field (`100-continue, foo`, `foo 100-continue`) and
  // sends the 100 before any handler runs.
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    if (!takesRequest(req, res)) return;
    // Answered without a 100 (a 417, or refused on its headers), the connection is closed by node:http,
    // and a client that sends the body anyway would meet a reset instead of reading the answer.
    lingerWhenClosed(req);
    if (!expectsContinue(req)) {
      refuse(req, res, 417, 'expectation_failed', EXPECTATION_FAILED_MESSAGE);
      return;
    }
    continueOnFirstRead(req, res);
    inTurn(req, res);
  });
  // Node's own answer to an Expect it does not meet is a bare 417 without a body. An empty field
  // (`Expect:`) expects nothing: §10.1.1 allows a 417 only for a member other than 100-continue.
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    if (!takesRequest(req, res)) return;
    if (expectations(req).length === 0) inTurn(req, res);
    else refuse(req, res, 417, 'expectation_failed', EXPECTATION_FAILED_MESSAGE);
  });
  // Without a listener node:http drops a CONNECT request's socket without a word. With one, it hands the
  // connection over as a tunnel's: no longer read, timed out, watched for errors or counted among the
  // connections closeAllConnections() ends. Answered at once, the 501 went out ahead of the answers owed
  // to the requests before it (RFC 9112 §9.3.2), and the connection stayed open for good, holding up
  // graceful shutdown (the HTTP-semantics audit). So it is answered in its turn, then closed within a second.
  server.on('connect', (_req, socket: Duplex) => {
    // Unwatched, a client's reset is an uncaught error, which ends the process.
    socket.on('error', () => socket.destroy());
    // The stalled-connection timeout, for an answer ahead of it that the client does not read.
    socket.on('timeout', () => socket.destroy());
    whenAnswered(
      socket,
      () => {
        // Already closing: an answer ahead of it was the connection's last.
        if (!socket.writable) return;
        observeUnparsed?.(NOT_A_PROXY[0]);
        socket.write(rawErrorResponse(NOT_A_PROXY, false));
        closeUnread(socket);
      },
      true,
    );
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
