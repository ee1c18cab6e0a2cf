import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** What a closing connection still reads of a refused body, and for how long: enough for a client's few MB on a slow link. */
const LINGER_BYTES = 32 * 1024 * 1024;
const LINGER_MS = 10_000;
/** A client that stopped sending (it read the answer, or waits for it) is not waited for longer than this. */
const LINGER_IDLE_MS = 1_000;
const CHECK_EVERY_MS = 100;

/** Connections reading the rest of a refused body: they close on their own, within LINGER_MS. */
const lingering = new WeakSet<Socket>();
/** Requests whose connection already closes in stages: the server, its Expect handling and a handler's refusal may each ask. */
const closingInStages = new WeakSet<IncomingMessage>();

/** Whether `socket` is reading the rest of a refused body, its response sent: graceful shutdown lets it finish. */
export function isLingering(socket: Socket): boolean {
  return lingering.has(socket);
}

/**
 * Closes the connection after this response in stages, as RFC 9112 §9.6 describes: the write side when the
 * response is sent, the read side once the client has closed its own or sent the rest of its request, dropped
 * unread. Closed at once, a connection with request bytes still unread is reset by the kernel, and a client
 * still sending a large body saw EPIPE instead of the answer (an MCP client posting 5 MB). Bounded: at most
 * LINGER_BYTES more, for at most LINGER_MS, and LINGER_IDLE_MS without anything arriving ends it.
 */
export function closeAfterLingering(req: IncomingMessage, res: ServerResponse): void {
  res.setHeader('Connection', 'close');
  lingerWhenClosed(req);
}

/**
 * Whenever node:http closes the connection before `req`'s body has been read (`Connection: close`), it
 * closes in stages, as closeAfterLingering does; with the body read, or a keep-alive answer, nothing changes.
 */
export function lingerWhenClosed(req: IncomingMessage): void {
  if (closingInStages.has(req)) return;
  closingInStages.add(req);
  const socket = req.socket;
  const destroySoon = socket.destroySoon.bind(socket);
  // node:http ends a `Connection: close` response with socket.destroySoon(): the write side, then all of it.
  socket.destroySoon = () => {
    if (req.complete || socket.destroyed) return destroySoon();
    socket.end();
    lingering.add(socket);
    const started = Date.now();
    // Counted on the socket: node:http drops a request body nobody reads without passing it on.
    const firstByte = socket.bytesRead;
    let lastByte = firstByte;
    let lastArrival = started;
    const check = setInterval(() => {
      const now = Date.now();
      if (socket.bytesRead !== lastByte) [lastByte, lastArrival] = [socket.bytesRead, now];
      if (lastByte - firstByte > LINGER_BYTES || now - lastArrival >= LINGER_IDLE_MS || now - started >= LINGER_MS) close();
    }, CHECK_EVERY_MS);
    const close = () => {
      clearInterval(check);
      socket.destroy();
    };
    req.once('end', close);
    socket.once('close', close);
    // The body's reader paused it when it refused it; what comes now is dropped.
    req.resume();
  };
}
