/**
 * WebSub subscribers for the fan-out benchmark: HTTPS on PORT_COUNT ephemeral ports spread over the
 * loopback addresses in LISTEN_HOSTS (127.0.0.1 unless given; the certificate in CERT_FILE/KEY_FILE
 * names them), each host:port a callback origin of its own. Challenges are echoed, notifications acknowledged with 204 and
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
const hosts = (process.env.LISTEN_HOSTS ?? '127.0.0.1').split(',');
/** host:port of each listening server. */
const origins: string[] = [];

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
// One handler behind many ports: each host:port is its own callback origin for the hub.
for (let i = 0; i < portCount; i++) {
  const server = createHttpsServer(tls, onRequest);
  server.on('error', (error) => {
    process.stderr.write(`subscribers: ${error.message}\n`);
    process.exit(1);
  });
  const host = hosts[i % hosts.length]!;
  server.listen(0, host, () => {
    const address = server.address();
    if (typeof address === 'object' && address) origins.push(`${host}:${address.port}`);
  });
}

createHttpServer((req, res) => {
  if (req.url === '/reset' && req.method === 'POST') {
    notifications = bytes = firstAt = lastAt = 0;
    perCallback.clear();
  }
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ origins, challenges, notifications, bytes, firstAt, lastAt, callbacks: perCallback.size }));
}).listen(0, '127.0.0.1', function (this: Server) {
  writeFileSync(process.env.CONTROL_PORT_FILE ?? '', String((this.address() as AddressInfo).port));
});
