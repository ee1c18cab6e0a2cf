import { request as httpRequest } from 'node:http';
import { constants, crc32, gunzipSync, inflateRawSync } from 'node:zlib';
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import fc from 'fast-check';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { gzipEnding, gzippedHead, type GzippedHead } from '@reviews/mcp-gateway/gzip-answers';
import { fetch0618, PROTOCOL_VERSION, rawSession, startGateway, type RunningGateway } from './helpers.js';

/** Polls (bounded) until the head's gzip is made on the thread pool. */
async function madeGzip(head: Buffer): Promise<GzippedHead> {
  for (let attempt = 0; attempt < 200; attempt += 1) {
    const made = gzippedHead(head);
    if (made !== null) return made;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error('the gzip of the head was never made');
}

describe('a gzipped head with a per-request tail', () => {
  it('is one gzip member of head and tail, which a decoder reading only the first member reads whole', async () => {
    const samples = fc.sample(fc.tuple(fc.uint8Array({ minLength: 1024, maxLength: 20_000 }), fc.uint8Array({ maxLength: 70_000 })), { numRuns: 30, seed: 7 });
    // Compressible heads too, like real JSON; tails of one stored block exactly, of several, and none.
    const json = Buffer.from('{"result":{"a":"b"},'.repeat(500));
    samples.push([json, Buffer.from('"r-1"}')], [json, Buffer.alloc(0xffff, 0x61)], [json, Buffer.alloc(150_000, 0x62)], [json, Buffer.alloc(0)]);
    for (const [headBytes, tailBytes] of samples) {
      const [head, tail] = [Buffer.from(headBytes), Buffer.from(tailBytes)];
      const whole = Buffer.concat([head, tail]);
      const gzip = await madeGzip(head);
      const member = Buffer.concat([gzip.prefix, gzipEnding(gzip, tail)]);
      expect(gunzipSync(member).equals(whole)).toBe(true);
      // One member: its deflate data ends in a final block holding everything, and its trailer covers everything.
      expect(inflateRawSync(member.subarray(10, member.length - 8), { finishFlush: constants.Z_FINISH }).equals(whole)).toBe(true);
      expect([member.readUInt32LE(member.length - 8), member.readUInt32LE(member.length - 4)]).toEqual([crc32(whole), whole.length]);
    }
  });

  it('is made once per head, off the request: the first asks get null; a head under 1 KiB never gets one', async () => {
    const small = Buffer.from('x'.repeat(1023));
    const head = Buffer.from('x'.repeat(4096));
    expect([gzippedHead(small), gzippedHead(head)]).toEqual([null, null]);
    const made = await madeGzip(head);
    expect(gzippedHead(head)).toBe(made);
    // Asked for first, the small head would have been deflated by now, before the larger one.
    expect(gzippedHead(small)).toBeNull();
  });
});

/** A POST over node:http, so no Accept-Encoding is added (fetch adds `gzip, deflate`). */
function rawPost(url: string, body: string, headers: Record<string, string>): Promise<{ encoding: string | undefined; vary: string | undefined; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers }, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ encoding: res.headers['content-encoding'], vary: res.headers.vary, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('memoized MCP answers over HTTP', () => {
  let gateway: RunningGateway;
  beforeAll(async () => {
    gateway = await startGateway();
  });
  afterAll(() => gateway.close());

  it('reach the SDK client gzipped once their gzip is made, decoding to the same results', async () => {
    const encodings: (string | null)[] = [];
    const recording: typeof fetch = async (input, init) => {
      const response = await fetch0618(input, init);
      encodings.push(response.headers.get('content-encoding'));
      return response;
    };
    const client = new Client({ name: 'gzip-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url), { fetch: recording }));
    try {
      const calls = [
        () => client.callTool({ name: 'search_reviews', arguments: { limit: 40 } }),
        () => client.listTools(),
        () => client.readResource({ uri: 'https://reviews.example.com/reviews.json' }),
      ];
      for (const call of calls) {
        const first = await call();
        let repeated = first;
        for (let attempt = 0; attempt < 100; attempt += 1) {
          encodings.length = 0;
          repeated = await call();
          if (encodings.includes('gzip')) break;
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        expect(encodings).toEqual(['gzip']);
        expect(repeated).toEqual(first);
      }
    } finally {
      await client.close();
    }
  });

  it('stay unencoded for a request that does not accept gzip, and vary by Accept-Encoding', async () => {
    const sessionId = await rawSession(gateway.url);
    const headers = { 'Mcp-Session-Id': sessionId, 'MCP-Protocol-Version': PROTOCOL_VERSION };
    const body = JSON.stringify({ jsonrpc: '2.0', id: 'x', method: 'tools/list' });
    let gzipped: Buffer | null = null;
    for (let attempt = 0; attempt < 100 && gzipped === null; attempt += 1) {
      const answer = await rawPost(gateway.url, body, { ...headers, 'Accept-Encoding': 'gzip' });
      expect(answer.vary).toBe('Origin, Accept-Encoding');
      if (answer.encoding === 'gzip') gzipped = gunzipSync(answer.body);
      else await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(gzipped).not.toBeNull();
    for (const acceptEncoding of [undefined, 'identity', 'gzip;q=0, identity', 'br']) {
      const answer = await rawPost(gateway.url, body, acceptEncoding === undefined ? headers : { ...headers, 'Accept-Encoding': acceptEncoding });
      expect([acceptEncoding, answer.encoding, answer.vary]).toEqual([acceptEncoding, undefined, 'Origin, Accept-Encoding']);
      expect(answer.body.equals(gzipped!)).toBe(true);
    }
  });
});
