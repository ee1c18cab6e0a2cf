import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { afterEach, describe, expect, it } from '@jest/globals';
import { createHttpServer, type RequestHandler } from '@reviews/runtime';

/** Every target the handler was given, so a test can tell which requests got past the checks. */
let seen: string[] = [];
const echo: RequestHandler = (req, res) => {
  seen.push(req.url!);
  res.end('ok');
};

let server: Server | null = null;
afterEach(async () => {
  seen = [];
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = null;
});

async function listen(...args: Parameters<typeof createHttpServer>): Promise<number> {
  server = createHttpServer(...args);
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** One request written as raw bytes (so any target can be sent as is); the response is parsed just enough to assert on. */
function exchange(port: number, requestLine: string): Promise<{ status: number; headers: Record<string, string>; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(`${requestLine} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`));
    let data = '';
    socket.on('data', (chunk) => (data += chunk.toString('latin1')));
    socket.on('error', reject);
    socket.on('end', () => {
      const [head = '', body = ''] = data.split('\r\n\r\n');
      const [statusLine = '', ...fields] = head.split('\r\n');
      const headers = Object.fromEntries(fields.map((field) => [field.slice(0, field.indexOf(':')).toLowerCase(), field.slice(field.indexOf(':') + 1).trim()]));
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body });
    });
  });
}

describe('createHttpServer: percent-encoding in the query (RFC 3986 §2.1)', () => {
  it.each([
    ['/api/reviews/search?query=a%2', 'not followed by two hexadecimal digits'],
    ['/api/reviews/search?query=%', 'not followed by two hexadecimal digits'],
    ['/api/reviews/search?query=%zz&limit=5', 'not followed by two hexadecimal digits'],
    ['/reviews.json?v=1&x=%G1', 'not followed by two hexadecimal digits'],
    ['/api/reviews/search?query=%FF', 'UTF-8'],
    ['/api/reviews/search?query=caf%C3', 'UTF-8'],
    ['/api/reviews/search?query=caf%C3x%A9', 'UTF-8'],
    ['/api/reviews/search?query=%C0%AF', 'UTF-8'],
    ['/api/reviews/search?query=%ED%A0%80', 'UTF-8'],
    ['/api/reviews/search?query=%F4%90%80%80', 'UTF-8'],
    ['/api/reviews/search?query=%80', 'UTF-8'],
  ])('refuses %s with the 400 envelope naming the query', async (target, problem) => {
    const port = await listen(echo);
    const res = await exchange(port, `GET ${target}`);
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toBe('application/json');
    const body = JSON.parse(res.body) as { error: string; message: string };
    expect(body.error).toBe('bad_request');
    expect(body.message).toContain('query');
    expect(body.message).toContain(problem);
    expect(seen).toEqual([]);
  });

  it('serves well-formed escapes in the query as sent, whatever the path holds', async () => {
    const port = await listen(echo);
    const served = [
      '/api/reviews/search?query=caf%C3%A9%20au%20lait',
      '/api/reviews/search?query=%F0%9F%98%80&limit=5',
      '/api/reviews/search?query=a+b%2B%3D',
      '/api/reviews/search?query=100%25',
      '/reviews%2Ejson?v=%E2%82%AC',
    ];
    for (const target of served) expect([target, (await exchange(port, `GET ${target}`)).status]).toEqual([target, 200]);
    expect(seen).toEqual([...served.slice(0, 4), '/reviews.json?v=%E2%82%AC']);
  });

  it('still names the path when the path holds the malformed escape', async () => {
    const port = await listen(echo);
    const res = await exchange(port, 'GET /a%2?query=%FF');
    expect(res.status).toBe(400);
    expect((JSON.parse(res.body) as { message: string }).message).toContain('request path');
  });
});

describe('createHttpServer: OPTIONS * (RFC 9110 §9.3.7)', () => {
  it('answers 204 with Allow listing the methods of the read API by default', async () => {
    const port = await listen(echo);
    const res = await exchange(port, 'OPTIONS *');
    expect(res.status).toBe(204);
    expect(res.headers['allow']).toBe('GET, HEAD, OPTIONS');
    expect(seen).toEqual([]);
  });

  it('answers with the methods the service says it serves', async () => {
    const port = await listen(echo, undefined, 'GET, HEAD, OPTIONS, POST');
    const res = await exchange(port, 'OPTIONS *');
    expect(res.status).toBe(204);
    expect(res.headers['allow']).toBe('GET, HEAD, OPTIONS, POST');
  });
});
