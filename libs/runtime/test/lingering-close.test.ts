import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { connect } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, describe, expect, it } from '@jest/globals';
import { closeAfterLingering } from '@reviews/runtime';

/** A server refusing every body with a 413 at once, as the gateway and the hub do past their limits; reports when each connection closed. */
async function refusingServer(): Promise<{ server: Server; port: number; closedAt: Promise<number> }> {
  let resolveClosed: (at: number) => void = () => undefined;
  const closedAt = new Promise<number>((resolve) => (resolveClosed = resolve));
  const server = createServer((req, res) => {
    req.socket.once('close', () => resolveClosed(Date.now()));
    req.pause();
    closeAfterLingering(req, res);
    res.writeHead(413, { 'Content-Length': 2 });
    res.end('no');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, port: (server.address() as AddressInfo).port, closedAt };
}

/** A client that keeps its side open after the server's FIN and sends `bytes` of a body a trillion bytes long. */
async function halfOpenClient(port: number, bytes: number): Promise<{ socket: Socket; answered: Promise<number> }> {
  const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
  socket.on('error', () => undefined);
  await once(socket, 'connect');
  const answered = new Promise<number>((resolve) => socket.once('data', () => resolve(Date.now())));
  socket.write(`POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1000000000000\r\n\r\n${' '.repeat(bytes)}`);
  return { socket, answered };
}

let open: { server: Server; socket: Socket } | undefined;
afterEach(async () => {
  open?.socket.destroy();
  open?.server.closeAllConnections();
  open?.server.close();
  open = undefined;
});

describe('closeAfterLingering', () => {
  it('closes a second after the client stops sending, though the client keeps its side open', async () => {
    const { server, port, closedAt } = await refusingServer();
    const { socket, answered } = await halfOpenClient(port, 100_000);
    open = { server, socket };
    const [answer, closed] = await Promise.all([answered, Promise.race([closedAt, delay(5000, null)])]);
    expect(closed).not.toBeNull();
    // Idle for a second, checked every 100 ms.
    expect(closed! - answer).toBeGreaterThanOrEqual(900);
    expect(closed! - answer).toBeLessThan(2500);
  });

  it('closes at once when the request ends, its body sent whole', async () => {
    const { server, port, closedAt } = await refusingServer();
    const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    socket.on('error', () => undefined);
    open = { server, socket };
    await once(socket, 'connect');
    const answered = new Promise<number>((resolve) => socket.once('data', () => resolve(Date.now())));
    socket.write(`POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 200000\r\n\r\n${' '.repeat(100_000)}`);
    const answer = await answered;
    socket.write(' '.repeat(100_000));
    const closed = await Promise.race([closedAt, delay(5000, null)]);
    expect(closed).not.toBeNull();
    expect(closed! - answer).toBeLessThan(500);
  });

  it('keeps reading a client that sends on, up to 10 s', async () => {
    const { server, port, closedAt } = await refusingServer();
    const { socket, answered } = await halfOpenClient(port, 1000);
    open = { server, socket };
    const answer = await answered;
    // A byte every 200 ms: never idle for a second, far from 32 MiB.
    let closed: number | null = null;
    void closedAt.then((at) => (closed = at));
    while (closed === null && Date.now() - answer < 13_000) {
      socket.write(' ');
      await delay(200);
    }
    expect(closed).not.toBeNull();
    expect(closed! - answer).toBeGreaterThanOrEqual(9_500);
    expect(closed! - answer).toBeLessThan(11_500);
  }, 20_000);
});
