import { readFileSync } from 'node:fs';
import { connect, credsAuthenticator, nkeyAuthenticator, type ConnectionOptions, type NatsConnection } from '@nats-io/transport-node';
import { natsConnectOptions, type NatsAccess } from '@reviews/runtime';

/** How one process connects; everything but where and as whom, which come from the NatsAccess. */
export type NatsConnectSettings = Pick<ConnectionOptions, 'name' | 'timeout' | 'maxReconnectAttempts' | 'reconnectTimeWait'>;

/**
 * The one way every process here connects to NATS: the servers, credentials and TLS files the
 * configuration names (NATS_URL, NATS_CREDS, NATS_NKEY, NATS_CERT, NATS_KEY, NATS_CA). Creds and
 * seed files are read at every (re)connect, as the transport reads the TLS files, so credentials that
 * a secret rotates in place are picked up without a restart.
 */
export function connectNats(access: NatsAccess, settings: NatsConnectSettings): Promise<NatsConnection> {
  const { credsFile, nkeyFile, ...options } = natsConnectOptions(access);
  const authenticator =
    credsFile !== undefined
      ? credsAuthenticator(() => readFileSync(credsFile))
      : nkeyFile !== undefined
        ? nkeyAuthenticator(() => new TextEncoder().encode(readFileSync(nkeyFile, 'utf8').trim()))
        : undefined;
  return connect({ ...options, ...(authenticator === undefined ? {} : { authenticator }), ...settings });
}
