import { createConnection, createServer, type AddressInfo, type Socket } from 'node:net';

export interface TcpRelay {
  /** `nats://127.0.0.1:<port>` */
  readonly url: string;
  /** Stops listening and destroys every connection through it: the clients are cut off. */
  cut(): Promise<void>;
  /** Listens again on the same port after cut(). */
  restore(): Promise<void>;
}

/**
 * A TCP relay on loopback to `target` (a nats:// URL), for fault tests that cut or tamper with what
 * passes: `wire` connects each client to its own connection upstream (pipes, or a filter of its own).
 * Either socket failing destroys it.
 */
export async function startTcpRelay(target: string, wire: (client: Socket, upstream: Socket) => void): Promise<TcpRelay> {
  const { hostname, port: targetPort } = new URL(target);
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = createConnection(Number(targetPort), hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => socket.destroy());
    }
    wire(client, upstream);
  });
  const listen = (port: number) => new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  await listen(0);
  const port = (server.address() as AddressInfo).port;
  return {
    url: `nats://127.0.0.1:${port}`,
    cut: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
    restore: () => listen(port),
  };
}
