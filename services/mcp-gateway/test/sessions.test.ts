import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { connectClient, PROTOCOL_VERSION, startAlternatingProxy, startGateway, type RunningGateway } from './helpers.js';

describe('MCP sessions across replicas', () => {
  let replicaA: RunningGateway;
  let replicaB: RunningGateway;
  let proxy: Awaited<ReturnType<typeof startAlternatingProxy>>;
  const targets: string[] = [];

  beforeAll(async () => {
    [replicaA, replicaB] = await Promise.all([startGateway(), startGateway()]);
    targets.push(replicaA.url, replicaB.url);
    proxy = await startAlternatingProxy(targets);
  });
  afterAll(async () => {
    await proxy.close();
    await Promise.all([replicaA.close(), replicaB.close()]);
  });

  it('serves one SDK session whose requests alternate between two replicas', async () => {
    const { client, transport } = await connectClient(proxy.url);
    try {
      expect(transport.protocolVersion).toBe(PROTOCOL_VERSION);
      expect(client.getServerVersion()).toMatchObject({ name: 'reviews' });
      const before = proxy.hits.length;
      for (let i = 0; i < 4; i++) {
        const result = await client.callTool({ name: 'get_business', arguments: {} });
        expect(result.isError).toBeFalsy();
      }
      const hosts = new Set(proxy.hits.slice(before));
      expect(hosts).toEqual(new Set([new URL(replicaA.url).host, new URL(replicaB.url).host]));
    } finally {
      await client.close();
    }
  });

  it('lets a restarted replica (same secret) accept a session started before the restart', async () => {
    const { client, transport } = await connectClient(replicaB.url);
    const sessionId = transport.sessionId;
    await client.close();
    expect(sessionId).toMatch(/^v1\./);

    await replicaB.close();
    replicaB = await startGateway();
    targets[1] = replicaB.url;

    const resumed = await connectClient(replicaB.url, sessionId);
    try {
      const result = await resumed.client.callTool({ name: 'search_reviews', arguments: { rating: 5, limit: 2 } });
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toMatchObject({ returned: expect.any(Number) });
    } finally {
      await resumed.client.close();
    }
  });

  it('rejects a session signed with another secret with 404, which the SDK client reports', async () => {
    const other = await startGateway({ env: { MCP_SESSION_SECRET: 'a-completely-different-secret-of-32-chars' } });
    const foreign = (await connectClient(other.url)).transport.sessionId;
    await other.close();
    const stranger = await connectClient(replicaA.url, foreign);
    try {
      await expect(stranger.client.listTools()).rejects.toMatchObject({ code: 404 });
      await expect(stranger.client.listTools()).rejects.toBeInstanceOf(StreamableHTTPError);
    } finally {
      await stranger.client.close();
    }
  });
});
