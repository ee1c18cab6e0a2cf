/**
 * WebSub subscribers for the fan-out benchmark: HTTPS on PORT_COUNT ephemeral 127.0.0.1 ports (the
 * certificate in CERT_FILE/KEY_FILE). Challenges are echoed, notifications acknowledged with 204 and
 * counted; GET http://127.0.0.1:<control port>/stats reports the counts and first/last arrival times.
 * The control port is the system's choice, written to CONTROL_PORT_FILE once it listens: a port
 * picked by the parent and bound here later could be taken meanwhile by one of the hundreds of
 * connections the suite opens (it was, once in four runs).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Server } from 'node:net';

const tls = { key: readFileSync(process.env.KEY_FILE ?? ''), cert: readFileSync(process.env.CERT_FILE ?? '') };
const portCount = Number(process.env.PORT_COUNT ?? 1);
const ports: number[] = [];

let challenges = 0;
let notifications = 0;
let bytes = 0;
let firstAt = 0;
let lastAt = 0;
/** Notifications per callback target: distinct callbacks reached, and any duplicate deliveries. */
const perCallback = new Map<string, number>();

const onRequest = (req: IncomingMessage, res: ServerResponse) => {
  if (req.method === 'GET') {
    const challenge = new URL(req.url ?? '/', 'https://x').searchParams.getAll('hub.challenge').at(-1);
    if (challenge !== undefined) challenges++;
    res.writeHead(200, { 'content-type': 'text/plain' }).end(challenge ?? '');
    return;
  }
  let size = 0;
  req.on('data', (chunk: Buffer) => (size += chunk.length));
  req.on('end', () => {
    const now = Date.now();
    if (notifications === 0) firstAt = now;
    lastAt = now;
    notifications++;
    bytes += size;
    const target = req.url ?? '/';
    perCallback.set(target, (perCallback.get(target) ?? 0) + 1);
    res.writeHead(204).end();
  });
};
// One handler behind many ports: each port is its own callback origin (host:port) for the hub.
for (let i = 0; i < portCount; i++) {
  const server = createHttpsServer(tls, onRequest);
  server.on('error', (error) => {
    process.stderr.write(`subscribers: ${error.message}\n`);
    process.exit(1);
  });
  server.listen(0, '127.0.0.1', () => {
    const address = server.address();
    if (typeof address === 'object' && address) ports.push(address.port);
  });
}

createHttpServer((req, res) => {
  if (req.url === '/reset' && req.method === 'POST') {
    notifications = bytes = firstAt = lastAt = 0;
    perCallback.clear();
  }
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ ports, challenges, notifications, bytes, firstAt, lastAt, callbacks: perCallback.size }));
}).listen(0, '127.0.0.1', function (this: Server) {
  writeFileSync(process.env.CONTROL_PORT_FILE ?? '', String((this.address() as AddressInfo).port));
});
