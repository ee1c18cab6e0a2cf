import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { ConfigError } from '@reviews/runtime';
import { createOriginPolicy, createSessionIds, resolveSessionSecret, SESSION_SECRET_FILE } from '@reviews/mcp-gateway';
import { initializeBody, post, PROTOCOL_VERSION, startGateway } from './helpers.js';

const SECRET = 'x'.repeat(32);

describe('session ids', () => {
  const ids = createSessionIds(SECRET);

  it('are unique, visible ASCII and verify under the same secret only', () => {
    const a = ids.mint(PROTOCOL_VERSION);
    const b = ids.mint(PROTOCOL_VERSION);
    expect(a).not.toBe(b);
    expect(a).toMatch(/^[\x21-\x7e]+$/);
    expect(ids.verify(a)).toEqual({ protocolVersion: PROTOCOL_VERSION });
    expect(createSessionIds(SECRET).verify(a)).toEqual({ protocolVersion: PROTOCOL_VERSION });
    expect(createSessionIds('y'.repeat(32)).verify(a)).toBeNull();
  });

  it('refuse any change to the id', () => {
    const id = ids.mint(PROTOCOL_VERSION);
    for (const forged of [`${id}x`, `${id}.x`, id.slice(1), id.replace('v1.', 'v2.'), `${id.slice(0, -1)}${id.endsWith('A') ? 'B' : 'A'}`, '', 'v1', 'x'.repeat(10_000)]) {
      expect(ids.verify(forged)).toBeNull();
    }
  });
});

describe('session secret', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'mcp-secret-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('uses MCP_SESSION_SECRET when set', () => {
    expect(resolveSessionSecret({ MCP_SESSION_SECRET: SECRET, NATS_URL: 'nats://x', DATA_DIR: dataDir })).toBe(SECRET);
  });

  it('is required when NATS_URL is set (replicas must share it)', () => {
    expect(() => resolveSessionSecret({ NATS_URL: 'nats://x', DATA_DIR: dataDir })).toThrow(ConfigError);
    expect(() => resolveSessionSecret({ NATS_URL: 'nats://x', DATA_DIR: dataDir })).toThrow(/MCP_SESSION_SECRET/);
  });

  it('is generated once under DATA_DIR in standalone mode and kept across restarts', async () => {
    const first = resolveSessionSecret({ DATA_DIR: dataDir });
    expect(first.length).toBeGreaterThanOrEqual(32);
    expect(resolveSessionSecret({ DATA_DIR: dataDir })).toBe(first);
    expect(readFileSync(join(dataDir, SESSION_SECRET_FILE), 'utf8')).toBe(first);
    expect(statSync(join(dataDir, SESSION_SECRET_FILE)).mode & 0o777).toBe(0o600);

    // A session from one standalone process is accepted after a restart.
    const before = await startGateway({ env: { MCP_SESSION_SECRET: '', DATA_DIR: dataDir } });
    const sessionId = (await post(before.url, initializeBody())).headers.get('mcp-session-id') ?? '';
    await before.close();
    const after = await startGateway({ env: { MCP_SESSION_SECRET: '', DATA_DIR: dataDir } });
    try {
      const response = await post(after.url, { jsonrpc: '2.0', id: 2, method: 'ping' }, { 'Mcp-Session-Id': sessionId, 'MCP-Protocol-Version': PROTOCOL_VERSION });
      expect(response.status).toBe(200);
    } finally {
      await after.close();
    }
  });
});

describe('origin policy', () => {
  it('allows the BASE_URL origin and loopback origins on any port by default', () => {
    const allowed = createOriginPolicy({ BASE_URL: 'https://reviews.example.com' });
    for (const origin of ['https://reviews.example.com', 'http://localhost:6274', 'https://localhost', 'http://127.0.0.1:8080', 'http://[::1]:3000']) expect(allowed(origin)).toBe(true);
    for (const origin of ['http://reviews.example.com', 'https://reviews.example.com.evil.example', 'http://localhost.evil.example', 'null', 'file://', 'chrome-extension://abc']) {
      expect(allowed(origin)).toBe(false);
    }
  });

  it('replaces the default with MCP_ALLOWED_ORIGINS', () => {
    const allowed = createOriginPolicy({ BASE_URL: 'https://reviews.example.com', MCP_ALLOWED_ORIGINS: 'https://a.example, https://b.example:8443/' });
    expect(allowed('https://a.example')).toBe(true);
    expect(allowed('https://b.example:8443')).toBe(true);
    expect(allowed('https://reviews.example.com')).toBe(false);
    expect(allowed('http://localhost:6274')).toBe(false);
    // A list written with a trailing comma (or an empty entry) is still that list.
    expect(createOriginPolicy({ BASE_URL: 'https://reviews.example.com', MCP_ALLOWED_ORIGINS: 'https://a.example,, https://b.example,' })('https://b.example')).toBe(true);
  });

  it('refuses an entry that is not an origin, naming the variable', () => {
    expect(() => createOriginPolicy({ BASE_URL: 'https://r.example', MCP_ALLOWED_ORIGINS: 'https://a.example/path' })).toThrow(/MCP_ALLOWED_ORIGINS/);
    expect(() => createOriginPolicy({ BASE_URL: 'https://r.example', MCP_ALLOWED_ORIGINS: '*' })).toThrow(ConfigError);
  });
});
