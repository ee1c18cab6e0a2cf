// Tilt's front door (deploy/dev/front-door.mjs), run for real: the URLs the services advertise on
// values-dev.yaml's baseUrl must reach the service the chart's Ingress would route them to.
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { stopChild } from '../support/child-process.js';
import { eventually } from '../support/eventually.js';
import { freePort } from '../support/nats-server.js';
import { repoRoot } from './support/chart.js';

const upstreams: Server[] = [];
let frontDoor: ChildProcess;
let base = '';
let stoppedPort = 0;

/** A stand-in service that answers with its name, the request it got and a header of its own. */
async function upstream(name: string): Promise<number> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      res.writeHead(name === 'read-api' && req.url === '/missing' ? 404 : 200, { 'content-type': 'application/json', 'x-served-by': name });
      res.end(JSON.stringify({ name, method: req.method, url: req.url, body: Buffer.concat(chunks).toString('utf8'), accept: req.headers.accept ?? null }));
    });
  });
  upstreams.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

beforeAll(async () => {
  const [readApi, mcpGateway, listen] = [await upstream('read-api'), await upstream('mcp-gateway'), await freePort()];
  stoppedPort = await freePort();
  frontDoor = spawn(process.execPath, [join(repoRoot, 'deploy/dev/front-door.mjs'), String(listen), String(readApi), String(mcpGateway), String(stoppedPort)], { stdio: 'ignore' });
  base = `http://127.0.0.1:${listen}`;
  await eventually(async () => (await fetch(`${base}/reviews.json`).catch(() => null))?.ok === true);
});
afterAll(async () => {
  if (frontDoor) await stopChild(frontDoor);
  await Promise.all(upstreams.map((s) => new Promise((resolve) => s.close(resolve))));
});

describe('deploy/dev/front-door.mjs', () => {
  it.each([
    ['/reviews.json', 'read-api'],
    ['/api/reviews/search?query=care', 'read-api'],
    ['/mcp', 'mcp-gateway'],
    ['/mcp?x=1', 'mcp-gateway'],
    // The Ingress matches /mcp exactly.
    ['/mcp/other', 'read-api'],
    ['/mcpx', 'read-api'],
  ])('routes %s to %s, as the chart’s Ingress does', async (path, name) => {
    const res = await fetch(`${base}${path}`, { headers: { accept: 'application/json' } });
    expect(res.headers.get('x-served-by')).toBe(name);
    expect(await res.json()).toEqual({ name, method: 'GET', url: path, body: '', accept: 'application/json' });
  });

  it('passes a POST body through and the status back', async () => {
    const posted = await fetch(`${base}/mcp`, { method: 'POST', body: '{"jsonrpc":"2.0"}', headers: { 'content-type': 'application/json' } });
    expect(await posted.json()).toMatchObject({ name: 'mcp-gateway', method: 'POST', body: '{"jsonrpc":"2.0"}' });
    expect((await fetch(`${base}/missing`)).status).toBe(404);
  });

  it('answers 502 naming the port when the service behind a path is not forwarded', async () => {
    const res = await fetch(`${base}/api/websub/hub`, { method: 'POST', body: 'hub.mode=subscribe' });
    expect(res.status).toBe(502);
    expect(await res.text()).toContain(`nothing answers on 127.0.0.1:${stoppedPort}`);
  });
});
