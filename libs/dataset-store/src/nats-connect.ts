import { readFileSync } from 'node:fs';
import { jwtAuthenticator, NatsConnectionImpl, nkeyAuthenticator, setTransportFactory, type Authenticator, type ConnectionOptions, type NatsConnection } from '@nats-io/transport-node';
import { NodeTransport, nodeResolveHost } from '@nats-io/transport-node/lib/node_transport.js';
import { natsConnectOptions, parseNatsCreds, parseNatsSeed, type NatsAccess } from '@reviews/runtime';

/** The client sends a PING this often, and takes the connection as lost with two unanswered: a hung server is noticed within ~30 s, not nats.js's ~6 minutes. */
const PING_INTERVAL_MS = 10_000;
const MAX_PINGS_OUT = 2;

/** How one process connects; everything but where and as whom, which come from the NatsAccess. */
export type NatsConnectSettings = Pick<ConnectionOptions, 'name' | 'timeout' | 'maxReconnectAttempts' | 'reconnectTimeWait'>;

/**
 * The one way every process here connects to NATS: the servers, credentials and TLS files the
 * configuration names (NATS_URL, NATS_CREDS, NATS_NKEY, NATS_CERT, NATS_KEY, NATS_CA). Creds and
 * seed files are read at every (re)connect, as the transport reads the TLS files, so credentials that
 * a secret rotates in place are picked up without a restart.
 *
 * nats.js closes a connection for good when its authenticator throws, and after two authentication
 * errors in a row: a creds file caught half-written by a rotation, or a user JWT that expired until the
 * renewed one arrives, would leave a pod on a dead connection. So a file that does not parse at a
 * reconnect stands for the last one that did, and refused credentials are retried like any outage.
 */
export function connectNats(access: NatsAccess, settings: NatsConnectSettings): Promise<NatsConnection> {
  const { credsFile, nkeyFile, ...options } = natsConnectOptions(access);
  // What transport-node's connect() does, with a transport that closes what it dialled (below).
  setTransportFactory({ factory: () => new DialClosingTransport(), dnsResolveFn: nodeResolveHost });
  return NatsConnectionImpl.connect({
    ...options,
    ...identity(credsFile, nkeyFile),
    ignoreAuthErrorAbort: true,
    pingInterval: PING_INTERVAL_MS,
    maxPingOut: MAX_PINGS_OUT,
    ...settings,
  });
}

/**
 * How a long-running service connects: an attempt may take 2 s (the service retries while NATS is
 * down, serving what it has), and once connected it reconnects forever, a second apart.
 */
export function connectServiceNats(access: NatsAccess, service: string): Promise<NatsConnection> {
  return connectNats(access, { name: service, timeout: 2_000, maxReconnectAttempts: -1, reconnectTimeWait: 1_000 });
}

/**
 * nats.js's transport closes only a socket whose handshake finished: a dial that timed out waiting for the
 * server's INFO (a hung server still accepting TCP) left its socket open, one per attempt while the
 * server hung, and kept the publish CLI from ever exiting.
 */
class DialClosingTransport extends NodeTransport {
  override close(err?: Error): Promise<void> {
    if (!this.connected) {
      this.done = true;
      this.socket?.destroy();
    }
    return super.close(err);
  }
}

function identity(credsFile: string | undefined, nkeyFile: string | undefined): { authenticator?: Authenticator } {
  const encode = (seed: string) => new TextEncoder().encode(seed);
  if (credsFile !== undefined) {
    const creds = lastGood(() => parseNatsCreds(readFileSync(credsFile, 'utf8')));
    // One read per connect: the JWT and the seed always come from the same file.
    return {
      authenticator: (nonce) => {
        const { jwt, seed } = creds();
        return jwtAuthenticator(jwt, encode(seed))(nonce);
      },
    };
  }
  if (nkeyFile !== undefined) {
    const seed = lastGood(() => parseNatsSeed(readFileSync(nkeyFile, 'utf8')));
    return { authenticator: nkeyAuthenticator(() => encode(seed())) };
  }
  return {};
}

/** `read`'s result, or the last one it gave when it throws now; it throws only if it never succeeded. */
function lastGood<T>(read: () => T): () => T {
  let good: { value: T } | undefined;
  return () => {
    try {
      good = { value: read() };
    } catch (error) {
      if (good === undefined) throw error;
    }
    return good.value;
  };
}
