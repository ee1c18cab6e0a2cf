import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import type { Env } from './config.js';
import { parseNatsCreds, parseNatsSeed } from './nats-files.js';

/**
 * Where and as whom a process connects to NATS: NATS_URL, and the files NATS_CREDS, NATS_NKEY,
 * NATS_CERT, NATS_KEY and NATS_CA name. The variables are the nats CLI's, with its meanings, so a
 * platform team configures the services as it configures the CLI.
 */
export interface NatsAccess {
  /** NATS_URL: one or more comma-separated server URLs, credentials allowed in them. */
  readonly servers: string;
  /** NATS_CREDS: a creds file (user JWT and NKey seed), as decentralized (operator mode) auth issues them. */
  readonly creds?: string | undefined;
  /** NATS_NKEY: a file holding a user NKey seed. */
  readonly nkey?: string | undefined;
  /** NATS_CERT and NATS_KEY: the client certificate and its key (PEM), for servers that verify clients. */
  readonly cert?: string | undefined;
  readonly key?: string | undefined;
  /** NATS_CA: the CA certificates (PEM) the server's certificate must chain to, instead of the system's. */
  readonly ca?: string | undefined;
}

/** The configuration's NATS access, or undefined without NATS_URL (the file variables then mean nothing). */
export function natsAccessOf(env: Pick<Env, 'NATS_URL' | 'NATS_CREDS' | 'NATS_NKEY' | 'NATS_CERT' | 'NATS_KEY' | 'NATS_CA'>): NatsAccess | undefined {
  if (env.NATS_URL === undefined) return undefined;
  return { servers: env.NATS_URL, creds: env.NATS_CREDS, nkey: env.NATS_NKEY, cert: env.NATS_CERT, key: env.NATS_KEY, ca: env.NATS_CA };
}

/** What nats.js needs to connect: the server URLs without credentials, and the credentials apart. */
export interface NatsConnectOptions {
  readonly servers: string[];
  readonly user?: string;
  readonly pass?: string;
  readonly token?: string;
  /** Read at every (re)connect, so a rotated file is picked up. */
  readonly credsFile?: string;
  readonly nkeyFile?: string;
  /**
   * Set for `tls://` URLs and whenever a certificate file is named: the connection is refused unless
   * it is TLS. The server's certificate chains to NATS_CA if set, else to the system CAs and
   * NODE_EXTRA_CA_CERTS. The transport reads the files at every connect.
   */
  readonly tls?: { readonly certFile?: string; readonly keyFile?: string; readonly caFile?: string };
}

/** A NATS setting that cannot work, and the variable to blame. */
export class NatsAccessError extends Error {
  constructor(
    readonly variable: 'NATS_URL' | 'NATS_CREDS' | 'NATS_NKEY' | 'NATS_CERT' | 'NATS_KEY' | 'NATS_CA',
    message: string,
  ) {
    super(message);
    this.name = 'NatsAccessError';
  }
}

const USERINFO = /^((?:[a-z][a-z0-9+.-]*:\/\/)?)([^@/]*)@/i;
const TLS_SCHEME = /^tls:\/\//i;
/** The schemes nats.js serves over TCP (or none: `host:port`). */
const NATS_SCHEME = /^(?:(?:nats|tls):\/\/|(?![a-z][a-z0-9+.-]*:\/\/))/i;

/**
 * NATS access as connection options. A URL may carry credentials as the NATS CLI and the Go client
 * read them: `nats://user:password@host:4222`, or `nats://token@host:4222` (percent-encoded where
 * needed). nats.js 3 ignores credentials in a URL, so a server that requires them refused the
 * connection: they are taken out here and passed apart. One connection has one identity, so every URL
 * that carries credentials must carry the same ones, and a creds or NKey file excludes them.
 *
 * nats.js 3 also ignores the `tls://` scheme: it upgrades to TLS only when the server offers it, so
 * against a server (or anyone in between) that does not, it would go on in plain text, credentials
 * included. A `tls://` URL, or a certificate file, therefore makes TLS a requirement of the
 * connection. That requirement holds for the whole server list, so a list that mixes `tls://` with
 * other URLs is refused. Nothing here reads the files (natsAccessProblems does, at start).
 */
export function natsConnectOptions(access: NatsAccess): NatsConnectOptions {
  const servers: string[] = [];
  let credentials: string | undefined;
  const entries = access.servers.split(',').map((entry) => entry.trim());
  const tlsUrls = entries.filter((server) => TLS_SCHEME.test(server)).length;
  if (tlsUrls > 0 && tlsUrls < entries.length) throw new NatsAccessError('NATS_URL', 'the server URLs mix tls:// with other schemes; one connection either requires TLS or does not');
  for (const server of entries) {
    const userinfo = USERINFO.exec(server);
    const withoutCredentials = userinfo ? server.replace(USERINFO, '$1') : server;
    if (!isServerUrl(withoutCredentials)) throw new NatsAccessError('NATS_URL', `"${withoutCredentials}" is not a server URL (nats://host:port, tls://host:port or host:port)`);
    // The TCP transport dials whatever the scheme says (nats-connect.ts builds the connection itself, without
    // transport-node's connect() and its refusal of ws:// URLs): an `https://` or `wss://` URL went out in plain text, credentials included.
    if (!NATS_SCHEME.test(withoutCredentials)) throw new NatsAccessError('NATS_URL', `"${withoutCredentials}" names another protocol; a NATS server URL is nats://host:port, tls://host:port (TLS required) or host:port`);
    servers.push(withoutCredentials);
    if (!userinfo) continue;
    const found = userinfo[2] as string;
    if (credentials !== undefined && credentials !== found) throw new NatsAccessError('NATS_URL', 'the server URLs carry different credentials; one connection has one identity');
    credentials = found;
  }
  const identityFile = identityFileOf(access, credentials !== undefined && credentials !== '');
  const tls = tlsOf(access, tlsUrls > 0);
  const options = { servers, ...identityFile, ...(tls === undefined ? {} : { tls }) };
  if (credentials === undefined || credentials === '') return options;
  const colon = credentials.indexOf(':');
  if (colon < 0) return { ...options, token: decode(credentials) };
  return { ...options, user: decode(credentials.slice(0, colon)), pass: decode(credentials.slice(colon + 1)) };
}

function identityFileOf(access: NatsAccess, urlCredentials: boolean): { credsFile?: string; nkeyFile?: string } {
  if (access.creds !== undefined && access.nkey !== undefined) throw new NatsAccessError('NATS_NKEY', 'set NATS_CREDS or NATS_NKEY, not both: a creds file carries its own NKey seed');
  const variable = access.creds !== undefined ? 'NATS_CREDS' : access.nkey !== undefined ? 'NATS_NKEY' : undefined;
  if (variable !== undefined && urlCredentials) throw new NatsAccessError('NATS_URL', `carries credentials and ${variable} is set; one connection has one identity`);
  if (access.creds !== undefined) return { credsFile: access.creds };
  return access.nkey !== undefined ? { nkeyFile: access.nkey } : {};
}

function tlsOf(access: NatsAccess, tlsUrls: boolean): NatsConnectOptions['tls'] {
  if ((access.cert === undefined) !== (access.key === undefined)) {
    throw new NatsAccessError(access.cert === undefined ? 'NATS_CERT' : 'NATS_KEY', 'NATS_CERT and NATS_KEY name a client certificate and its key: set both or neither');
  }
  if (!tlsUrls && access.cert === undefined && access.ca === undefined) return undefined;
  return {
    ...(access.cert === undefined ? {} : { certFile: access.cert }),
    ...(access.key === undefined ? {} : { keyFile: access.key }),
    ...(access.ca === undefined ? {} : { caFile: access.ca }),
  };
}

/**
 * What is wrong with the files a NATS access names, read now so that a missing secret or a mismatched
 * key stops the process at start, naming the variable, instead of failing every connection later.
 */
export function natsAccessProblems(access: NatsAccess): NatsAccessError[] {
  const problems: NatsAccessError[] = [];
  const read = (variable: NatsAccessError['variable'], path: string | undefined): string | undefined => {
    if (path === undefined) return undefined;
    try {
      return readFileSync(path, 'utf8');
    } catch (error) {
      problems.push(new NatsAccessError(variable, `cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`));
      return undefined;
    }
  };
  const check = (variable: NatsAccessError['variable'], path: string | undefined, parse: (text: string) => unknown): void => {
    const text = read(variable, path);
    if (text === undefined) return;
    try {
      parse(text);
    } catch (error) {
      problems.push(new NatsAccessError(variable, `${path}: ${(error as Error).message}`));
    }
  };
  // The parsers the connection uses (nats-connect.ts in dataset-store), so what passes here connects.
  check('NATS_CREDS', access.creds, parseNatsCreds);
  check('NATS_NKEY', access.nkey, parseNatsSeed);
  const cert = read('NATS_CERT', access.cert);
  const key = read('NATS_KEY', access.key);
  const ca = read('NATS_CA', access.ca);
  if (problems.length > 0) return problems;
  // The same check the TLS handshake would make, now: PEM that parses, and a key that is the certificate's.
  if (ca !== undefined) {
    try {
      if (!ca.includes('-----BEGIN CERTIFICATE-----')) throw new Error('no PEM certificate in it');
      createSecureContext({ ca });
    } catch (error) {
      problems.push(new NatsAccessError('NATS_CA', `${access.ca} holds no usable CA certificate: ${(error as Error).message}`));
    }
  }
  if (cert !== undefined && key !== undefined) {
    try {
      createSecureContext({ cert, key });
    } catch (error) {
      problems.push(new NatsAccessError('NATS_KEY', `${access.cert} and ${access.key} are not a certificate and its private key: ${(error as Error).message}`));
    }
  }
  return problems;
}

/** A server as nats.js reads one: a URL with a host, its scheme optional (`host:port`). */
function isServerUrl(server: string): boolean {
  try {
    const url = new URL(server.includes('://') ? server : `nats://${server}`);
    // nats.js reads the host as an http URL's: `nats://%%%` parsed here, then failed every connection.
    return url.hostname !== '' && new URL(`http://${url.host}`).hostname !== '';
  } catch {
    return false;
  }
}

function decode(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw new NatsAccessError('NATS_URL', 'the credentials in a server URL are not valid percent-encoding');
  }
}

/**
 * A NATS server list as it may be shown: in /readyz (public through the Ingress), logs and the
 * publish CLI's errors (the seed Job's log). Credentials in a URL are replaced, the hosts and ports stay.
 */
export function displayedServers(access: NatsAccess): string {
  return access.servers
    .split(',')
    .map((server) => server.trim().replace(USERINFO, '$1***@'))
    .join(',');
}
