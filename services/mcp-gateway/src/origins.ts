import { ConfigError, type Config } from '@reviews/runtime';

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * Which browser origins may call /mcp (DNS-rebinding protection). MCP_ALLOWED_ORIGINS, a comma list of
 * exact origins, replaces the default: the BASE_URL origin plus http(s) on localhost, 127.0.0.1 and
 * [::1] on any port (local tools such as the MCP Inspector run there). Requests without Origin are not
 * from a browser page and are always allowed.
 */
export function createOriginPolicy(config: Pick<Config, 'BASE_URL' | 'MCP_ALLOWED_ORIGINS'>): (origin: string) => boolean {
  if (config.MCP_ALLOWED_ORIGINS !== undefined) {
    const allowed = new Set(config.MCP_ALLOWED_ORIGINS.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '').map(parseOrigin));
    return (origin) => allowed.has(origin);
  }
  const base = new URL(config.BASE_URL).origin;
  return (origin) => origin === base || isLoopbackOrigin(origin);
}

function parseOrigin(entry: string): string {
  let url: URL | undefined;
  try {
    url = new URL(entry);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.origin !== entry.replace(/\/$/, '')) {
    throw new ConfigError([`MCP_ALLOWED_ORIGINS: "${entry}" is not an origin (scheme://host[:port], no path), e.g. https://app.example.com`]);
  }
  return url.origin;
}

function isLoopbackOrigin(origin: string): boolean {
  try {
    const url = new URL(origin);
    return (url.protocol === 'http:' || url.protocol === 'https:') && LOOPBACK_HOSTS.has(url.hostname) && url.origin === origin;
  } catch {
    return false;
  }
}
