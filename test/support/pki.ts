import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** A throw-away CA and a `localhost` / 127.0.0.1 / ::1 certificate it signed (for servers, and for clients that present one), made with the openssl CLI. */
export interface TestPki {
  readonly caPem: string;
  readonly keyPem: string;
  readonly certPem: string;
}

export async function createTestPki(): Promise<TestPki> {
  const dir = await mkdtemp(join(tmpdir(), 'test-pki-'));
  const file = (name: string) => join(dir, name);
  try {
    const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
    await run('openssl', ['req', '-x509', ...ec, '-keyout', file('ca.key'), '-out', file('ca.crt'), '-days', '2', '-subj', '/CN=reviews test CA',
      '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
    await run('openssl', ['req', ...ec, '-keyout', file('leaf.key'), '-out', file('leaf.csr'), '-subj', '/CN=localhost']);
    await writeFile(file('ext.cnf'), 'subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1\nextendedKeyUsage=serverAuth,clientAuth\n');
    await run('openssl', ['x509', '-req', '-in', file('leaf.csr'), '-CA', file('ca.crt'), '-CAkey', file('ca.key'), '-CAcreateserial', '-out', file('leaf.crt'), '-days', '2', '-extfile', file('ext.cnf')]);
    const [caPem, keyPem, certPem] = await Promise.all(['ca.crt', 'leaf.key', 'leaf.crt'].map((n) => readFile(file(n), 'utf8')));
    return { caPem: caPem as string, keyPem: keyPem as string, certPem: certPem as string };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
