import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeAccount, encodeOperator, encodeUser, fmtCreds } from '@nats-io/jwt';
import { createAccount, createOperator, createUser, type KeyPair } from '@nats-io/nkeys';
import { pino } from 'pino';
import { datasetVersion } from '@reviews/domain';
import { createMetrics, loadConfig } from '@reviews/runtime';
import { connectNats, followSnapshots, openDatasetSource, PUBLISH_EXIT, runPublishCli } from '@reviews/dataset-store';
import { buildDataset } from '../../domain/test/fixtures.js';
import { eventually } from '../../../test/support/eventually.js';
import { startNatsServer, type NatsServerHandle } from '../../../test/support/nats-server.js';
import { createTestPki } from '../../../test/support/pki.js';

const silent = pino({ level: 'silent' });

/** Publishes `file` with the CLI as the seed Job runs it, from nothing but `env`. */
async function publish(file: string, env: NodeJS.ProcessEnv): Promise<{ code: number; err: string }> {
  const err: string[] = [];
  const code = await runPublishCli([file], env, { out: () => undefined, err: (line) => err.push(line) });
  return { code, err: err.join('\n') };
}

/** A replica configured by `env` alone follows the store until it serves `version`. */
async function followUntilServing(env: NodeJS.ProcessEnv, version: string): Promise<void> {
  const config = loadConfig(env);
  const metrics = createMetrics();
  const source = await openDatasetSource(config, { logger: silent, metrics, service: 'identity' });
  const follower = await followSnapshots(source, { baseUrl: config.BASE_URL, logger: silent, metrics, service: 'identity' });
  try {
    await eventually(() => follower.current()?.version === version, { timeoutMs: 15_000 });
  } finally {
    await follower.close();
  }
}

/** A nats-server configuration that admits only the NKey user `publicKey`. */
const onlyNkeyUser = (conf: string, publicKey: string) => writeFile(conf, `authorization { users: [ { nkey: ${publicKey} } ] }\n`);

/** A seed file as `nk -gen user` writes it. */
const writeSeed = (file: string, user: KeyPair) => writeFile(file, `${new TextDecoder().decode(user.getSeed())}\n`);

/**
 * Identities a platform team's NATS asks for beyond a URL's user and password, each against a real
 * nats-server that requires it: publisher and replicas configured by the nats CLI's variables.
 */
describe('NATS_CREDS, NATS_NKEY and NATS_CERT/NATS_KEY/NATS_CA against real nats-servers', () => {
  const dataset = buildDataset({ reviews: 4, seed: 91 });
  const version = datasetVersion(dataset);
  const servers: NatsServerHandle[] = [];
  let dir: string;
  let file: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'nats-identity-'));
    file = join(dir, 'dataset.json');
    await writeFile(file, JSON.stringify(dataset));
  });

  afterAll(async () => {
    await Promise.all(servers.map((server) => server.dispose()));
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const serverWith = async (args: string[]): Promise<NatsServerHandle> => {
    const server = await startNatsServer(args);
    servers.push(server);
    return server;
  };

  /** Without `identity` the server refuses the publish; with it the CLI publishes and a replica follows. */
  const expectRequired = async (server: NatsServerHandle, identity: NodeJS.ProcessEnv): Promise<void> => {
    expect(await publish(file, { NATS_URL: server.url })).toMatchObject({ code: PUBLISH_EXIT.natsUnavailable, err: expect.stringMatching(/Authorization Violation/i) });
    expect(await publish(file, { NATS_URL: server.url, ...identity })).toEqual({ code: PUBLISH_EXIT.ok, err: '' });
    await followUntilServing({ NATS_URL: server.url, ...identity }, version);
  };

  // Decentralized auth (operator mode), as nsc sets it up: the server trusts an operator, the account
  // has JetStream, and the user proves itself with the JWT and seed of its creds file.
  it('publishes and follows with a creds file, and is refused without it', async () => {
    const [operator, system, account, user] = [createOperator(), createAccount(), createAccount(), createUser()];
    const unlimited = { conn: -1, subs: -1, data: -1, payload: -1, imports: -1, exports: -1, wildcards: true, leaf: -1, mem_storage: -1, disk_storage: -1, streams: -1, consumer: -1 };
    const [operatorJwt, systemJwt, accountJwt, userJwt] = await Promise.all([
      encodeOperator('reviews-test', operator, { system_account: system.getPublicKey() }),
      encodeAccount('SYS', system, {}, { signer: operator }),
      encodeAccount('REVIEWS', account, { limits: unlimited }, { signer: operator }),
      encodeUser('read-api', user, account),
    ]);
    const conf = join(dir, 'operator.conf');
    await writeFile(
      conf,
      `operator: ${operatorJwt}\nsystem_account: ${system.getPublicKey()}\nresolver: MEMORY\n` +
        `resolver_preload: {\n  ${system.getPublicKey()}: ${systemJwt}\n  ${account.getPublicKey()}: ${accountJwt}\n}\n`,
    );
    const creds = join(dir, 'read-api.creds');
    await writeFile(creds, fmtCreds(userJwt, user));
    const server = await serverWith(['-c', conf]);

    await expectRequired(server, { NATS_CREDS: creds });
  });

  it('publishes and follows with an NKey seed file, and is refused without it', async () => {
    const user = createUser();
    const conf = join(dir, 'nkey.conf');
    await onlyNkeyUser(conf, user.getPublicKey());
    const seed = join(dir, 'user.nk');
    await writeSeed(seed, user);
    const server = await serverWith(['-c', conf]);

    await expectRequired(server, { NATS_NKEY: seed });
  });

  // A rotation caught half-way (the kubelet swaps a Secret's files; a CI job rewrites one): nats.js closed
  // the connection for good when the seed did not parse at a reconnect, and the replica never recovered.
  it('reconnects with the last seed that parsed when the file is unreadable at a reconnect', async () => {
    const user = createUser();
    const conf = join(dir, 'rotation.conf');
    await onlyNkeyUser(conf, user.getPublicKey());
    const [replicaSeed, publisherSeed] = [join(dir, 'replica.nk'), join(dir, 'publisher.nk')];
    await Promise.all([writeSeed(replicaSeed, user), writeSeed(publisherSeed, user)]);
    const server = await serverWith(['-c', conf]);
    const env = { NATS_URL: server.url, NATS_NKEY: replicaSeed };
    const config = loadConfig(env);
    const metrics = createMetrics();
    const follower = await followSnapshots(await openDatasetSource(config, { logger: silent, metrics, service: 'rotation' }), { baseUrl: config.BASE_URL, logger: silent, metrics, service: 'rotation' });
    try {
      expect(await publish(file, { NATS_URL: server.url, NATS_NKEY: publisherSeed })).toEqual({ code: PUBLISH_EXIT.ok, err: '' });
      await eventually(() => follower.current()?.version === version, { timeoutMs: 15_000 });

      await writeFile(replicaSeed, '');
      await server.restart();
      const next = buildDataset({ reviews: 5, seed: 92 });
      const nextFile = join(dir, 'next.json');
      await writeFile(nextFile, JSON.stringify(next));
      expect(await publish(nextFile, { NATS_URL: server.url, NATS_NKEY: publisherSeed })).toEqual({ code: PUBLISH_EXIT.ok, err: '' });
      // As below: a reconnect the restarting server cut can wait for the PINGs to notice.
      await eventually(() => follower.current()?.version === datasetVersion(next), { timeoutMs: 45_000 });
      expect(follower.health().source.connected).toBe(true);
    } finally {
      await follower.close();
    }
  }, 90_000);

  // nats.js gives up on a connection after two authentication errors in a row: a user JWT that expired until
  // its renewal arrives, or an account briefly gone, left a pod on a dead connection for good.
  it('keeps reconnecting through refused credentials, and is back once they are accepted again', async () => {
    const [user, other] = [createUser(), createUser()];
    const conf = join(dir, 'revoked.conf');
    const allow = (key: string) => onlyNkeyUser(conf, key);
    await allow(user.getPublicKey());
    const seed = join(dir, 'revoked.nk');
    await writeSeed(seed, user);
    const server = await serverWith(['-c', conf]);
    const nc = await connectNats({ servers: server.url, nkey: seed }, { name: 'revoked', maxReconnectAttempts: -1, reconnectTimeWait: 100 });
    let refusals = 0;
    let reconnects = 0;
    void (async () => {
      for await (const status of nc.status()) {
        if (status.type === 'error' && /authorization/i.test(String(status.error))) refusals++;
        if (status.type === 'reconnect') reconnects++;
      }
    })();
    try {
      await allow(other.getPublicKey());
      await server.restart();
      await eventually(() => refusals >= 3, { timeoutMs: 15_000 });
      await allow(user.getPublicKey());
      await server.restart();
      // Within the PING bound: nats.js can lose a reconnect that a stopping server cut in its handshake
      // (seen under load), and only the unanswered PINGs (connectNats: 10 s, two) start the next one.
      await eventually(() => reconnects >= 1, { timeoutMs: 45_000 });
      expect(nc.isClosed()).toBe(false);
      await nc.flush();
    } finally {
      await nc.close();
    }
  }, 90_000);

  // A server that verifies clients (mTLS), with a certificate from a private CA that NATS_CA names:
  // no NODE_EXTRA_CA_CERTS needed, and a nats:// URL still connects only over TLS.
  it('presents the client certificate NATS_CERT and NATS_KEY name, trusting NATS_CA, and is refused without one', async () => {
    const pki = await createTestPki();
    const [ca, cert, key] = [join(dir, 'ca.pem'), join(dir, 'tls.crt'), join(dir, 'tls.key')];
    await Promise.all([writeFile(ca, pki.caPem), writeFile(cert, pki.certPem), writeFile(key, pki.keyPem)]);
    const server = await serverWith(['--tlsverify', '--tlscert', cert, '--tlskey', key, '--tlscacert', ca]);

    const withoutCertificate = await publish(file, { NATS_URL: server.url, NATS_CA: ca });
    expect(withoutCertificate.code).toBe(PUBLISH_EXIT.natsUnavailable);
    const mtls = { NATS_URL: server.url, NATS_CERT: cert, NATS_KEY: key, NATS_CA: ca };
    expect(await publish(file, mtls)).toEqual({ code: PUBLISH_EXIT.ok, err: '' });
    await followUntilServing(mtls, version);
  });
});
