import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import { datasetVersion } from '@reviews/domain';
import { POINTER_BUCKET, POINTER_KEY, PUBLISH_EXIT, runPublishCli } from '@reviews/dataset-store';
import { buildDataset } from '../../domain/test/fixtures.js';
import { startNatsServer, type NatsServerHandle } from '../../../test/support/nats-server.js';
import { createTestPki } from '../../../test/support/pki.js';

const PUBLISH_CLI = new URL('../dist/publish-cli.js', import.meta.url).pathname;

/** The publish CLI in its own process, as the seed Job runs it: NODE_EXTRA_CA_CERTS is read only at process start. */
function publishInChild(file: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [PUBLISH_CLI, file], { env: { PATH: process.env.PATH, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('NATS_URL with tls:// URLs against real nats-servers', () => {
  const dataset = buildDataset({ reviews: 5, seed: 81 });
  let dir: string;
  let file: string;
  /** The private CA's certificate, as NODE_EXTRA_CA_CERTS names it. */
  let caFile: string;
  let caPem: string;
  let tlsServer: NatsServerHandle;
  let plainServer: NatsServerHandle;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'nats-tls-'));
    file = join(dir, 'dataset.json');
    await writeFile(file, JSON.stringify(dataset));
    // A nats-server certificate that a private CA signed, as in a cluster with its own CA.
    const pki = await createTestPki();
    caPem = pki.caPem;
    caFile = join(dir, 'ca.pem');
    const [cert, key] = [join(dir, 'server.pem'), join(dir, 'server.key')];
    await Promise.all([writeFile(caFile, pki.caPem), writeFile(cert, pki.certPem), writeFile(key, pki.keyPem)]);
    [tlsServer, plainServer] = await Promise.all([
      startNatsServer(['--tls', '--tlscert', cert, '--tlskey', key]),
      startNatsServer(['--user', 'seed', '--pass', 's3cret-pw']),
    ]);
  });

  afterAll(async () => {
    await Promise.all([tlsServer?.dispose(), plainServer?.dispose()]);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  // nats.js on its own goes on in plain text when the server offers no TLS, password included.
  it('refuses a server that offers no TLS instead of sending the credentials in plain text', async () => {
    const err: string[] = [];
    const code = await runPublishCli([file], { NATS_URL: plainServer.url.replace('nats://', 'tls://seed:s3cret-pw@') }, { out: () => undefined, err: (line) => err.push(line) });
    expect(code).toBe(PUBLISH_EXIT.natsUnavailable);
    expect(err.join('\n')).toMatch(/cannot reach NATS at tls:\/\/\*\*\*@127\.0\.0\.1:\d+: .*tls/i);
    expect(err.join('\n')).not.toContain('s3cret-pw');
  });

  it('publishes over TLS to a server whose certificate a private CA in NODE_EXTRA_CA_CERTS signed', async () => {
    const url = tlsServer.url.replace('nats://', 'tls://');
    const result = await publishInChild(file, { NATS_URL: url, NODE_EXTRA_CA_CERTS: caFile });
    expect(result).toMatchObject({ code: PUBLISH_EXIT.ok, stderr: '' });
    expect(result.stdout).toContain(`${datasetVersion(dataset)} published`);

    const nc = await connect({ servers: url, tls: { ca: caPem } });
    try {
      const pointer = await (await new Kvm(jetstream(nc)).open(POINTER_BUCKET)).get(POINTER_KEY);
      expect(pointer?.json()).toMatchObject({ version: datasetVersion(dataset) });
    } finally {
      await nc.close();
    }
  });

  it('refuses a server certificate that no trusted CA signed', async () => {
    const result = await publishInChild(file, { NATS_URL: tlsServer.url.replace('nats://', 'tls://') });
    expect(result.code).toBe(PUBLISH_EXIT.natsUnavailable);
    expect(result.stderr).toMatch(/cannot reach NATS at tls:\/\/127\.0\.0\.1:\d+: .*certificate/i);
  });
});
