import { once } from 'node:events';
import { request as httpRequest, createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { buildSnapshotFromInput, type Snapshot } from '@reviews/domain';
import { createHttpServer, createLogger, createMetrics, loadConfig, type Config, type Metrics } from '@reviews/runtime';
import { createMcpGateway } from '@reviews/mcp-gateway';
import { buildDataset } from '../../../libs/domain/test/fixtures.js';

export const BASE_URL = 'https://reviews.example.com';
export const SECRET = 'test-secret-that-is-at-least-32-characters-long';
export const PROTOCOL_VERSION = '2025-06-18';
export const MCP_HEADERS = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };

export function fixtureSnapshot(): Snapshot {
  return buildSnapshotFromInput(buildDataset({ reviews: 60, seed: 11 }), { baseUrl: BASE_URL, publishedAt: new Date('2025-07-01T12:00:00Z') });
}

export interface RunningGateway {
  readonly url: string;
  readonly metrics: Metrics;
  close(): Promise<void>;
}

async function listen(server: Server, port = 0): Promise<string> {
  server.listen(port, '127.0.0.1');
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function stop(server: Server): Promise<void> {
  server.closeAllConnections();
  server.close();
  await once(server, 'close');
}

/** A gateway on a loopback port, as a pod would run it (real node:http server, real express app). */
export async function startGateway(options: { snapshot?: Snapshot | null; env?: Record<string, string> } = {}): Promise<RunningGateway> {
  const config: Config = loadConfig({ BASE_URL, MCP_SESSION_SECRET: SECRET, ...options.env });
  const metrics = createMetrics();
  const snapshot = options.snapshot === undefined ? fixtureSnapshot() : options.snapshot;
  const handler = createMcpGateway({ config, logger: createLogger('mcp-gateway', 'silent'), metrics, snapshots: { current: () => snapshot } });
  const server = createHttpServer(handler);
  const origin = await listen(server);
  return { url: `${origin}/mcp`, metrics, close: () => stop(server) };
}

/**
 * Round-robin reverse proxy: each request goes to the next target, so consecutive requests of one
 * MCP session land on different replicas (a Kubernetes Service would pin a keep-alive connection).
 */
export async function startAlternatingProxy(targets: string[]): Promise<{ url: string; hits: string[]; close(): Promise<void> }> {
  const hits: string[] = [];
  let next = 0;
  const server = createServer((req, res) => {
    const target = new URL(targets[next++ % targets.length] as string);
    hits.push(target.host);
    const upstream = httpRequest({ host: target.hostname, port: target.port, path: target.pathname, method: req.method, headers: req.headers, agent: false }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  const origin = await listen(server);
  return { url: `${origin}/mcp`, hits, close: () => stop(server) };
}

/** The SDK client always offers its newest version; rewrite initialize to pin 2025-06-18 (notes/mcp.md §5.1). */
export const fetch0618: typeof fetch = (input, init) =>
  typeof init?.body === 'string' && init.body.includes('"method":"initialize"')
    ? fetch(input, { ...init, body: init.body.replace(/"protocolVersion":"[^"]+"/, `"protocolVersion":"${PROTOCOL_VERSION}"`) })
    : fetch(input, init);

export interface ConnectedClient {
  readonly client: Client;
  readonly transport: StreamableHTTPClientTransport;
}

/** An SDK client; with `sessionId` it skips initialize and resumes that session (another replica, a restarted pod). */
export async function connectClient(url: string, sessionId?: string): Promise<ConnectedClient> {
  const transport = new StreamableHTTPClientTransport(new URL(url), sessionId === undefined ? { fetch: fetch0618 } : { fetch: fetch0618, sessionId });
  if (sessionId !== undefined) transport.setProtocolVersion(PROTOCOL_VERSION);
  const client = new Client({ name: 'mcp-gateway-test', version: '1.0.0' });
  await client.connect(transport);
  return { client, transport };
}

/** POSTs `body` as is when it is text or bytes, else as JSON. */
export async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; json: unknown; text: string }> {
  const payload = typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body);
  const response = await fetch(url, { method: 'POST', headers: { ...MCP_HEADERS, ...headers }, body: payload });
  const text = await response.text();
  let json: unknown = undefined;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, json, text };
}

export function initializeBody(id: number | string = 1, protocolVersion = PROTOCOL_VERSION) {
  return { jsonrpc: '2.0', id, method: 'initialize', params: { protocolVersion, capabilities: {}, clientInfo: { name: 'raw-test', version: '1.0.0' } } };
}

/** Starts a session over raw HTTP, negotiating `protocolVersion`, and returns its id. */
export async function rawSession(url: string, protocolVersion = PROTOCOL_VERSION): Promise<string> {
  const response = await post(url, initializeBody(1, protocolVersion));
  const sessionId = response.headers.get('mcp-session-id');
  if (response.status !== 200 || sessionId === null) throw new Error(`initialize failed: ${response.status} ${response.text}`);
  return sessionId;
}
