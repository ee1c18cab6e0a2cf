/** What nats.js needs to connect: the server URLs without credentials, and the credentials apart. */
export interface NatsConnectOptions {
  readonly servers: string[];
  readonly user?: string;
  readonly pass?: string;
  readonly token?: string;
  /** Set for `tls://` URLs: the connection is refused unless it is TLS (trusting the system CAs and NODE_EXTRA_CA_CERTS). */
  readonly tls?: Record<string, never>;
}

const USERINFO = /^((?:[a-z][a-z0-9+.-]*:\/\/)?)([^@/]*)@/i;
const TLS_SCHEME = /^tls:\/\//i;

/**
 * NATS_URL (one or more comma-separated server URLs) as connection options. A URL may carry
 * credentials as the NATS CLI and the Go client read them: `nats://user:password@host:4222`, or
 * `nats://token@host:4222` (percent-encoded where needed). nats.js 3 ignores credentials in a URL,
 * so a server that requires them refused the connection: they are taken out here and passed apart.
 * One connection has one identity, so every URL that carries credentials must carry the same ones.
 *
 * nats.js 3 also ignores the `tls://` scheme: it upgrades to TLS only when the server offers it, so
 * against a server (or anyone in between) that does not, it would go on in plain text, credentials
 * included. A `tls://` URL therefore makes TLS a requirement of the connection. That requirement
 * holds for the whole server list, so a list that mixes `tls://` with other URLs is refused.
 */
export function natsConnectOptions(natsUrl: string): NatsConnectOptions {
  const servers: string[] = [];
  let credentials: string | undefined;
  const entries = natsUrl.split(',').map((entry) => entry.trim());
  const tlsUrls = entries.filter((server) => TLS_SCHEME.test(server)).length;
  if (tlsUrls > 0 && tlsUrls < entries.length) throw new Error('the server URLs mix tls:// with other schemes; one connection either requires TLS or does not');
  const tls = tlsUrls > 0 ? { tls: {} } : {};
  for (const server of entries) {
    const userinfo = USERINFO.exec(server);
    const withoutCredentials = userinfo ? server.replace(USERINFO, '$1') : server;
    if (!isServerUrl(withoutCredentials)) throw new Error(`"${withoutCredentials}" is not a server URL (nats://host:port, tls://host:port or host:port)`);
    servers.push(withoutCredentials);
    if (!userinfo) continue;
    const found = userinfo[2] as string;
    if (credentials !== undefined && credentials !== found) throw new Error('the server URLs carry different credentials; one connection has one identity');
    credentials = found;
  }
  if (credentials === undefined || credentials === '') return { servers, ...tls };
  const colon = credentials.indexOf(':');
  if (colon < 0) return { servers, token: decode(credentials), ...tls };
  return { servers, user: decode(credentials.slice(0, colon)), pass: decode(credentials.slice(colon + 1)), ...tls };
}

/** A server as nats.js reads one: a URL with a host, its scheme optional (`host:port`). */
function isServerUrl(server: string): boolean {
  try {
    return new URL(server.includes('://') ? server : `nats://${server}`).hostname !== '';
  } catch {
    return false;
  }
}

function decode(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw new Error('the credentials in a server URL are not valid percent-encoding');
  }
}

/**
 * A NATS server list as it may be shown: in /readyz (public through the Ingress), logs and the
 * publish CLI's errors (the seed Job's log). Credentials in a URL are replaced, the hosts and ports stay.
 */
export function displayedServers(natsUrl: string): string {
  return natsUrl
    .split(',')
    .map((server) => server.trim().replace(USERINFO, '$1***@'))
    .join(',');
}
