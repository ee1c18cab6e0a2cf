import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeUser, fmtCreds } from '@nats-io/jwt';
import { createAccount, createUser } from '@nats-io/nkeys';
import { ConfigError, displayedServers, loadConfig, natsConnectOptions } from '../src/index.js';
import { createTestPki } from '../../../test/support/pki.js';

describe('NATS_URL as connection options', () => {
  it.each([
    ['nats://a:4222', { servers: ['nats://a:4222'] }],
    ['nats://a:4222, nats://b:4222', { servers: ['nats://a:4222', 'nats://b:4222'] }],
    ['nats://reader:s3cret@a:4222,nats://b:4222', { servers: ['nats://a:4222', 'nats://b:4222'], user: 'reader', pass: 's3cret' }],
    ['tls://reader:p%40ss%3Aword@a:4222,tls://reader:p%40ss%3Aword@b:4222', { servers: ['tls://a:4222', 'tls://b:4222'], user: 'reader', pass: 'p@ss:word', tls: {} }],
    ['TLS://a:4222, tls://b', { servers: ['TLS://a:4222', 'tls://b'], tls: {} }],
    ['nats://t0ken@a:4222', { servers: ['nats://a:4222'], token: 't0ken' }],
    ['reader:pw@a:4222', { servers: ['a:4222'], user: 'reader', pass: 'pw' }],
  ])('%s connects to the servers with the credentials apart', (url, options) => {
    expect(natsConnectOptions({ servers: url })).toEqual(options);
  });

  it.each([
    ['nats://a:pw@x:4222,nats://b:pw@y:4222', 'the server URLs carry different credentials; one connection has one identity'],
    ['nats://a:%E0%A4%A@x:4222', 'the credentials in a server URL are not valid percent-encoding'],
    ['tls://a:4222,nats://b:4222', 'the server URLs mix tls:// with other schemes; one connection either requires TLS or does not'],
    ['tls://a:4222,b:4222', 'the server URLs mix tls:// with other schemes; one connection either requires TLS or does not'],
    ['http://x y', '"http://x y" is not a server URL (nats://host:port, tls://host:port or host:port)'],
    ['nats://a:4222,nats://', '"nats://" is not a server URL (nats://host:port, tls://host:port or host:port)'],
    ['nats://reader:s3cret@a:99999', '"nats://a:99999" is not a server URL (nats://host:port, tls://host:port or host:port)'],
    ['%%%', '"%%%" is not a server URL (nats://host:port, tls://host:port or host:port)'],
    ['nats://a b:4222', '"nats://a b:4222" is not a server URL (nats://host:port, tls://host:port or host:port)'],
    ['https://reader:s3cret@a:4222', '"https://a:4222" names another protocol; a NATS server URL is nats://host:port, tls://host:port (TLS required) or host:port'],
    ['nats://a:4222,wss://b:443', '"wss://b:443" names another protocol; a NATS server URL is nats://host:port, tls://host:port (TLS required) or host:port'],
  ])('%s is refused at start, naming NATS_URL (never its credentials)', (url, message) => {
    expect(() => loadConfig({ NATS_URL: url })).toThrow(new ConfigError([`NATS_URL: ${message}`]));
  });

  it.each([
    ['nats://user:pw@a:4222,nats://b:4222', 'nats://***@a:4222,nats://b:4222'],
    ['tls://token@a:4222', 'tls://***@a:4222'],
    ['user:pw@a:4222', '***@a:4222'],
    ['a:4222, b', 'a:4222,b'],
  ])('displayedServers(%s) is %s', (servers, shown) => {
    expect(displayedServers({ servers })).toBe(shown);
  });
});

describe('NATS_CREDS, NATS_NKEY, NATS_CERT, NATS_KEY and NATS_CA', () => {
  let dir: string;
  const path = (name: string) => join(dir, name);

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'nats-files-'));
    const [pki, other] = await Promise.all([createTestPki(), createTestPki()]);
    const [account, user, stranger] = [createAccount(), createUser(), createUser()];
    const [jwt, expired] = await Promise.all([encodeUser('read-api', user, account), encodeUser('read-api', user, account, {}, { exp: Math.floor(Date.now() / 1000) - 60 })]);
    const creds = new TextDecoder().decode(fmtCreds(jwt, user));
    const seed = new TextDecoder().decode(user.getSeed());
    // One character of the seed's body changed: base32 still, but its checksum fails.
    const typo = `${seed.slice(0, 10)}${seed[10] === 'A' ? 'B' : 'A'}${seed.slice(11)}`;
    await Promise.all([
      writeFile(path('user.creds'), creds),
      // As the Go client reads them: Windows line ends, or no final newline.
      writeFile(path('crlf.creds'), creds.replace(/\n/g, '\r\n')),
      writeFile(path('unterminated.creds'), creds.trimEnd()),
      writeFile(path('stranger.creds'), new TextDecoder().decode(fmtCreds(jwt, stranger))),
      writeFile(path('expired.creds'), new TextDecoder().decode(fmtCreds(expired, user))),
      writeFile(path('user.nk'), `${seed}\n`),
      // `nk -gen user -pubout` writes the public key after the seed.
      writeFile(path('pubout.nk'), `${seed}\n${user.getPublicKey()}\n`),
      writeFile(path('typo.nk'), `${typo}\n`),
      writeFile(path('ca.pem'), pki.caPem),
      writeFile(path('tls.crt'), pki.certPem),
      writeFile(path('tls.key'), pki.keyPem),
      writeFile(path('other.key'), other.keyPem),
      writeFile(path('notes.txt'), 'not a secret of any kind\n'),
    ]);
  });

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('pass the files to the connection, and a certificate file makes it TLS-only whatever the URL scheme', () => {
    const config = loadConfig({ NATS_URL: 'nats://a:4222', NATS_CREDS: path('user.creds'), NATS_CERT: path('tls.crt'), NATS_KEY: path('tls.key'), NATS_CA: path('ca.pem') });
    expect(config).toMatchObject({ NATS_CREDS: path('user.creds'), NATS_CERT: path('tls.crt'), NATS_KEY: path('tls.key'), NATS_CA: path('ca.pem') });
    expect(natsConnectOptions({ servers: 'nats://a:4222', creds: path('user.creds'), cert: path('tls.crt'), key: path('tls.key'), ca: path('ca.pem') })).toEqual({
      servers: ['nats://a:4222'],
      credsFile: path('user.creds'),
      tls: { certFile: path('tls.crt'), keyFile: path('tls.key'), caFile: path('ca.pem') },
    });
    expect(natsConnectOptions({ servers: 'a:4222', nkey: path('user.nk'), ca: path('ca.pem') })).toEqual({ servers: ['a:4222'], nkeyFile: path('user.nk'), tls: { caFile: path('ca.pem') } });
  });

  it.each([
    ['NATS_CREDS', 'crlf.creds'],
    ['NATS_CREDS', 'unterminated.creds'],
    ['NATS_NKEY', 'pubout.nk'],
    ['NATS_NKEY', 'user.creds'],
  ])('%s accepts %s, as the nats CLI does', (variable, file) => {
    expect(() => loadConfig({ NATS_URL: 'nats://a:4222', [variable]: path(file) })).not.toThrow();
  });

  it('mean nothing without NATS_URL: standalone starts beside a shell configured for the nats CLI', () => {
    expect(() => loadConfig({ NATS_CREDS: path('missing.creds'), NATS_CERT: path('missing.crt') })).not.toThrow();
  });

  it.each([
    [{ NATS_CREDS: 'user.creds', NATS_NKEY: 'user.nk' }, 'NATS_NKEY: set NATS_CREDS or NATS_NKEY, not both: a creds file carries its own NKey seed'],
    [{ NATS_CERT: 'tls.crt' }, 'NATS_KEY: NATS_CERT and NATS_KEY name a client certificate and its key: set both or neither'],
    [{ NATS_KEY: 'tls.key' }, 'NATS_CERT: NATS_CERT and NATS_KEY name a client certificate and its key: set both or neither'],
    [{ NATS_CREDS: 'missing.creds' }, 'NATS_CREDS: cannot read {dir}/missing.creds: ENOENT'],
    [{ NATS_CREDS: 'notes.txt' }, 'NATS_CREDS: {dir}/notes.txt: it is not a creds file: a user JWT and a user NKey seed, each between dashed lines, as nsc writes them'],
    [{ NATS_CREDS: 'stranger.creds' }, /^NATS_CREDS: \S+stranger\.creds: its seed is not the key of the user its JWT names \(U[A-Z2-7]{55}\)$/],
    [{ NATS_CREDS: 'expired.creds' }, /^NATS_CREDS: \S+expired\.creds: its user JWT expired at \d{4}-\d\d-\d\dT/],
    [{ NATS_NKEY: 'notes.txt' }, 'NATS_NKEY: {dir}/notes.txt: it holds no user NKey seed (SU…, as nsc or nk -gen user writes it)'],
    [{ NATS_NKEY: 'typo.nk' }, /^NATS_NKEY: \S+typo\.nk: its NKey seed is not valid \(.*checksum.*\)$/i],
    [{ NATS_CA: 'notes.txt' }, 'NATS_CA: {dir}/notes.txt holds no usable CA certificate: no PEM certificate in it'],
  ])('%o is refused at start, naming the variable', (files, message) => {
    const env = Object.fromEntries(Object.entries(files).map(([variable, name]) => [variable, path(name)]));
    let problems: string[] = [];
    try {
      loadConfig({ NATS_URL: 'nats://a:4222', ...env });
    } catch (error) {
      problems = (error as ConfigError).problems;
    }
    expect(problems).toEqual([typeof message === 'string' ? message.replace('{dir}', dir) : expect.stringMatching(message)]);
  });

  it('refuses a key that is not the certificate\'s, as the TLS handshake would', () => {
    expect(() => loadConfig({ NATS_URL: 'nats://a:4222', NATS_CERT: path('tls.crt'), NATS_KEY: path('other.key') })).toThrow(/NATS_KEY: .*tls\.crt and .*other\.key are not a certificate and its private key: .*key values mismatch/);
  });

  it('refuses credentials in NATS_URL beside a creds or NKey file: one connection has one identity', () => {
    expect(() => loadConfig({ NATS_URL: 'nats://u:p@a:4222', NATS_NKEY: path('user.nk') })).toThrow(new ConfigError(['NATS_URL: carries credentials and NATS_NKEY is set; one connection has one identity']));
  });

  it('never quote a seed in a refusal', () => {
    let message = '';
    try {
      loadConfig({ NATS_URL: 'nats://a:4222', NATS_NKEY: path('typo.nk') });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain('NATS_NKEY');
    expect(message).not.toMatch(/SU[A-Z2-7]{20}/);
  });
});
