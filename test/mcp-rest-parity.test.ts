import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { buildSnapshotFromInput } from '@reviews/domain';
import { createMcpGateway, MCP_PATH } from '@reviews/mcp-gateway';
import { createReadApi } from '@reviews/read-api';
import { composeRoutes, createHttpServer, createLogger, createMetrics, loadConfig } from '@reviews/runtime';
import { buildDataset } from '../libs/domain/test/fixtures.js';

const BASE_URL = 'https://reviews.example.com';

/**
 * The contract says search_reviews "is the HTTP equivalent" of GET /api/reviews/search: for the same
 * input both must return the same body, and reject the same parameters. Both services run behind one
 * port, routed like the ingress, over one snapshot.
 */
describe('MCP search_reviews and GET /api/reviews/search agree', () => {
  const server = createHttpServer(
    (() => {
      const snapshot = buildSnapshotFromInput(buildDataset({ reviews: 80, seed: 5 }), { baseUrl: BASE_URL, publishedAt: new Date('2025-07-01T00:00:00Z') });
      const snapshots = { current: () => snapshot };
      const logger = createLogger('parity', 'silent');
      const metrics = createMetrics();
      const config = loadConfig({ BASE_URL, MCP_SESSION_SECRET: 'parity-test-secret-of-at-least-32-characters' });
      return composeRoutes({ [MCP_PATH]: createMcpGateway({ config, logger, metrics, snapshots }) }, createReadApi({ logger, metrics, snapshots }));
    })(),
  );
  let origin: string;
  let client: Client;

  beforeAll(async () => {
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    client = new Client({ name: 'parity-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${origin}/mcp`)));
  });
  afterAll(async () => {
    await client.close();
    server.closeAllConnections();
    server.close();
    await once(server, 'close');
  });

  const search = (args: Record<string, unknown>) => client.callTool({ name: 'search_reviews', arguments: args }) as Promise<CallToolResult>;
  const rest = async (query: string) => {
    const response = await fetch(`${origin}/api/reviews/search${query === '' ? '' : `?${query}`}`);
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };

  it.each<[string, Record<string, unknown>]>([
    ['', {}],
    ['rating=5&limit=3', { rating: 5, limit: 3 }],
    ['min_rating=3.5', { min_rating: 3.5 }],
    ['since=2024-06-01&until=2024-12-31', { since: '2024-06-01', until: '2024-12-31' }],
    ['since=2025-03-07&until=2025-03-07', { since: '2025-03-07', until: '2025-03-07' }],
    ['query=kind', { query: 'kind' }],
    ['query=caf%C3%A9', { query: 'café' }],
    ['mentions_technician=maggie&min_rating=4', { mentions_technician: 'maggie', min_rating: 4 }],
    ['mentions_service=Direct%20cremation', { mentions_service: 'Direct cremation' }],
    ['mentions_service=memorial-service&limit=100', { mentions_service: 'memorial-service', limit: 100 }],
    ['query=nothing%20says%20this', { query: 'nothing says this' }],
    ['limit=5&cursor=2025-03-07~01J00000000000000000000000', { limit: 5, cursor: '2025-03-07~01J00000000000000000000000' }],
  ])('same result for ?%s', async (query, args) => {
    const [mcp, http] = await Promise.all([search(args), rest(query)]);
    expect(http.status).toBe(200);
    expect(mcp.isError).toBeFalsy();
    expect(mcp.structuredContent).toEqual(http.body);
  });

  it.each<[string, Record<string, unknown>, string[]]>([
    ['rating=6', { rating: 6 }, ['rating']],
    ['limit=0', { limit: 0 }, ['limit']],
    ['since=2025-02-30', { since: '2025-02-30' }, ['since']],
    ['since=2025-02-01&until=2025-01-01', { since: '2025-02-01', until: '2025-01-01' }, ['until']],
    ['cursor=page-2', { cursor: 'page-2' }, ['cursor']],
  ])('both reject ?%s at the same parameter', async (query, args, paths) => {
    const [mcp, http] = await Promise.all([search(args), rest(query)]);
    expect(http.status).toBe(400);
    expect((http.body['issues'] as { path: string[] }[]).map((issue) => issue.path.join('.'))).toEqual(paths);
    expect(mcp.isError).toBe(true);
    for (const path of paths) expect(JSON.stringify(mcp.content)).toContain(` at ${path}`);
  });
});
