import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** PEM files of a throw-away CA and a server certificate it signed for localhost and `ips` (127.0.0.1 unless given). */
export interface BenchPki {
  readonly caFile: string;
  readonly keyFile: string;
  readonly certFile: string;
  remove(): void;
}

/** Made with the openssl CLI like the tests' PKI (test/support/pki.ts), but kept as files for other processes (NODE_EXTRA_CA_CERTS, subscribers). */
export function createBenchPki(ips: readonly string[] = ['127.0.0.1']): BenchPki {
  const dir = mkdtempSync(join(tmpdir(), 'bench-pki-'));
  const file = (name: string) => join(dir, name);
  const openssl = (args: string[]) => execFileSync('openssl', args, { stdio: 'ignore' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(['req', '-x509', ...ec, '-keyout', file('ca.key'), '-out', file('ca.crt'), '-days', '2', '-subj', '/CN=bench CA',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
  openssl(['req', ...ec, '-keyout', file('leaf.key'), '-out', file('leaf.csr'), '-subj', '/CN=localhost']);
  writeFileSync(file('ext.cnf'), `subjectAltName=DNS:localhost,${ips.map((ip) => `IP:${ip}`).join(',')}\nextendedKeyUsage=serverAuth\n`);
  openssl(['x509', '-req', '-in', file('leaf.csr'), '-CA', file('ca.crt'), '-CAkey', file('ca.key'), '-CAcreateserial', '-out', file('leaf.crt'), '-days', '2', '-extfile', file('ext.cnf')]);
  return { caFile: file('ca.crt'), keyFile: file('leaf.key'), certFile: file('leaf.crt'), remove: () => rmSync(dir, { recursive: true, force: true }) };
}
