import { describe, it, expect, jest, afterEach } from '@jest/globals';
import { ConfigError, loadConfig, runOrExitOnConfigError } from '@reviews/runtime';

class Exited extends Error {
  constructor(readonly code: number | string | null | undefined) {
    super(`exit ${String(code)}`);
  }
}

/** process.exit and stderr captured: the entry-point contract is "message naming the variable, exit 1". */
function captureExit() {
  const written: string[] = [];
  jest.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    written.push(String(chunk));
    return true;
  });
  jest.spyOn(process, 'exit').mockImplementation((code) => {
    throw new Exited(code);
  });
  return written;
}

afterEach(() => {
  jest.restoreAllMocks();
});

describe('runOrExitOnConfigError (design card §8: invalid configuration stops the process with a message naming the variable)', () => {
  it('returns what the step built', async () => {
    await expect(runOrExitOnConfigError('svc', () => Promise.resolve(42))).resolves.toBe(42);
  });

  it('prints the ConfigError without a stack trace and exits 1, for sync and async steps', async () => {
    for (const step of [
      () => {
        throw new ConfigError(['MCP_ALLOWED_ORIGINS: "nope" is not an origin']);
      },
      () => Promise.reject(new ConfigError(['MCP_ALLOWED_ORIGINS: "nope" is not an origin'])),
    ]) {
      const written = captureExit();
      await expect(runOrExitOnConfigError('standalone', step)).rejects.toEqual(new Exited(1));
      expect(written.join('')).toBe('standalone: invalid configuration:\n  - MCP_ALLOWED_ORIGINS: "nope" is not an origin\n');
      jest.restoreAllMocks();
    }
  });

  it('lets any other error through untouched', async () => {
    const boom = new Error('disk on fire');
    await expect(runOrExitOnConfigError('svc', () => Promise.reject(boom))).rejects.toBe(boom);
  });
});

describe('WEBSUB_TRUSTED_PROXY_HOPS (how many proxies in front of the hub append to X-Forwarded-For)', () => {
  it('defaults to 0: the connecting address is the client', () => {
    expect(loadConfig({}).WEBSUB_TRUSTED_PROXY_HOPS).toBe(0);
  });

  it('takes a whole number of hops', () => {
    expect(loadConfig({ WEBSUB_TRUSTED_PROXY_HOPS: '1' }).WEBSUB_TRUSTED_PROXY_HOPS).toBe(1);
    expect(loadConfig({ WEBSUB_TRUSTED_PROXY_HOPS: '2' }).WEBSUB_TRUSTED_PROXY_HOPS).toBe(2);
  });

  it.each(['-1', '1.5', 'true', 'one', '0x1', ' 1', '1e1'])('refuses %j, naming the variable and what it counts', (value) => {
    expect(() => loadConfig({ WEBSUB_TRUSTED_PROXY_HOPS: value })).toThrow(
      new ConfigError(['WEBSUB_TRUSTED_PROXY_HOPS: must be a whole number of proxies in front of the service that append to X-Forwarded-For (0: none; rate limits then use the connecting address)']),
    );
  });
});

describe('MCP_RATE_LIMIT_PER_MINUTE and MCP_TRUSTED_PROXY_HOPS', () => {
  it('default to 600 a minute and the connecting address', () => {
    expect(loadConfig({})).toMatchObject({ MCP_RATE_LIMIT_PER_MINUTE: 600, MCP_TRUSTED_PROXY_HOPS: 0 });
    expect(loadConfig({ MCP_RATE_LIMIT_PER_MINUTE: '0', MCP_TRUSTED_PROXY_HOPS: '1' })).toMatchObject({ MCP_RATE_LIMIT_PER_MINUTE: 0, MCP_TRUSTED_PROXY_HOPS: 1 });
  });

  it.each(['-1', '1.5', 'ten', '6e2'])('refuses %j as a rate, naming the variable', (value) => {
    expect(() => loadConfig({ MCP_RATE_LIMIT_PER_MINUTE: value })).toThrow(new ConfigError(['MCP_RATE_LIMIT_PER_MINUTE: must be a whole number of requests per minute (0: no limit)']));
  });
});

describe('PORT and METRICS_PORT', () => {
  it('refuses one port for both, naming METRICS_PORT', () => {
    expect(() => loadConfig({ PORT: '9000', METRICS_PORT: '9000' })).toThrow(new ConfigError(['METRICS_PORT: must differ from PORT (9000): /metrics has a port of its own']));
    expect(() => loadConfig({ PORT: '9464' })).toThrow(new ConfigError(['METRICS_PORT: must differ from PORT (9464): /metrics has a port of its own']));
  });

  it('takes 0 for both: each gets a free port of its own', () => {
    expect(loadConfig({ PORT: '0', METRICS_PORT: '0' })).toMatchObject({ PORT: 0, METRICS_PORT: 0 });
  });
});

describe('BASE_URL', () => {
  it.each(['https://reviews.example.com', 'https://reviews.example.com/', 'http://localhost:8080/reviews'])('takes %j', (url) => {
    expect(loadConfig({ BASE_URL: url }).BASE_URL).toBe(url.replace(/\/+$/, ''));
  });

  // An audit: an IDN host went into Link headers as raw UTF-8 bytes, which feed readers decode as Latin-1 or refuse.
  it('writes a host or path outside ASCII as a URI: the host in punycode, the path percent-encoded', () => {
    expect(loadConfig({ BASE_URL: 'https://Bestattung-Müller.de:443/Bewertungen/ä/' }).BASE_URL).toBe('https://xn--bestattung-mller-uzb.de/Bewertungen/%C3%A4');
  });

  // A platform team's audit: each rendered and started, and every URL the services build (feeds, Link, topics) was broken.
  it.each(['https://reviews.example.com?x=1', 'https://reviews.example.com/#top', 'https://user:pw@reviews.example.com', 'https://reviews.example.com?'])('refuses %j, saying what a base URL may hold', (url) => {
    expect(() => loadConfig({ BASE_URL: url })).toThrow(new ConfigError(['BASE_URL: must be an origin with an optional path: no user information, query or fragment']));
  });
});
