import { Resolver } from 'node:dns/promises';
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { isPublicAddress } from '../src/address-policy.js';
import { decodeUnreservedEscapes } from '@reviews/runtime';
import { withHubParams } from '../src/callback-url.js';
import { createOutboundClient, SLOW_ORIGINS_CONCURRENCY, type OutboundClient } from '../src/outbound.js';
import { createTestPki, dnsServer, Subscriber, type TestPki } from './support.js';
import { eventually } from '../../../test/support/eventually.js';

describe('isPublicAddress', () => {
  it.each([
    ['127.0.0.1'], ['10.1.2.3'], ['172.16.0.1'], ['192.168.1.1'], ['169.254.169.254'], ['100.64.0.1'], ['0.0.0.0'], ['255.255.255.255'],
    ['224.0.0.1'], ['192.0.2.1'], ['::1'], ['::'], ['fe80::1'], ['fd00:ec2::254'], ['fc00::1'], ['::ffff:127.0.0.1'], ['::ffff:10.0.0.1'],
    ['64:ff9b::7f00:1'], ['64:ff9b:1::1'], ['2002:7f00:1::1'], ['2001:db8::1'], ['[::1]'], ['not-an-ip'],
    // IPv4-compatible (deprecated ::/96), however spelled: not the IPv4 address they carry. Node's
    // resolver prints them dotted, as in ::8.8.8.8.
    ['::127.0.0.1'], ['::7f00:1'], ['::8.8.8.8'], ['::808:808'], ['[::127.0.0.1]'],
    // Outside global unicast (2000::/3), IANA allocates nothing public.
    ['4000::1'], ['200::1'], ['fec0::1'], ['fe80::1%eth0'],
  ])('refuses %s', (address) => {
    expect(isPublicAddress(address)).toBe(false);
  });
  it.each([['93.184.215.14'], ['8.8.8.8'], ['2606:4700:4700::1111'], ['::ffff:8.8.8.8'], ['[2a00:1450:4001:82b::200e]']])('allows %s', (address) => {
    expect(isPublicAddress(address)).toBe(true);
  });
});

describe('callback URLs', () => {
  it('appends hub parameters by concatenation, keeping the callback query as it is', () => {
    expect(withHubParams('https://a.example/cb', { 'hub.mode': 'subscribe' })).toBe('https://a.example/cb?hub.mode=subscribe');
    expect(withHubParams('https://a.example/cb?x=a%20b+c', { 'hub.mode': 'x y' })).toBe('https://a.example/cb?x=a%20b+c&hub.mode=x+y');
    expect(withHubParams('https://a.example/cb?', { a: '1' })).toBe('https://a.example/cb?a=1');
    expect(withHubParams('https://a.example/cb?x=1&', { a: '1' })).toBe('https://a.example/cb?x=1&a=1');
  });
  it('decodes only unreserved percent-escapes', () => {
    expect(decodeUnreservedEscapes('https://h/%7Euser/%41%2F%3F%20%2e')).toBe('https://h/~user/A%2F%3F%20.');
  });
});

describe('outbound client (real HTTPS on loopback)', () => {
  let pki: TestPki;
  let server: Subscriber;
  const clients: OutboundClient[] = [];
  const client = (allowPrivateAddresses: boolean, extra: { ca?: string; totalMs?: number; queueMs?: number; connectionsPerOrigin?: number } = {}) => {
    const c = createOutboundClient({
      allowPrivateAddresses,
      userAgent: 'test-agent',
      ...(extra.ca ? { tls: { ca: extra.ca } } : {}),
      timeouts: { ...(extra.totalMs ? { totalMs: extra.totalMs } : {}), ...(extra.queueMs ? { queueMs: extra.queueMs } : {}) },
      ...(extra.connectionsPerOrigin ? { connectionsPerOrigin: extra.connectionsPerOrigin } : {}),
    });
    clients.push(c);
    return c;
  };

  beforeAll(async () => {
    pki = await createTestPki();
    server = await Subscriber.start(pki);
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await server?.close();
  });

  it.each([['127.0.0.1'], ['[::ffff:127.0.0.1]'], ['[::1]'], ['[::127.0.0.1]'], ['localhost']])('blocks %s before any byte is sent when private addresses are disallowed', async (host) => {
    const name = `blocked-${host.replace(/[^a-z0-9]/gi, '')}`;
    const result = await client(false, { ca: pki.caPem }).send({ method: 'GET', url: server.url(name, '', host), keepBodyBytes: 10 });
    expect(result).toMatchObject({ ok: false, reason: 'blocked' });
    expect(server.requests(name)).toEqual([]);
  });

  it('reaches loopback when allowed, trusting the extra CA; without it the certificate is refused', async () => {
    const trusted = await client(true, { ca: pki.caPem }).send({ method: 'GET', url: server.url('trusted'), keepBodyBytes: 10 });
    expect(trusted).toMatchObject({ ok: true, status: 200 });
    expect(server.requests('trusted')[0]?.headers['user-agent']).toBe('test-agent');
    const untrusted = await client(true).send({ method: 'GET', url: server.url('untrusted'), keepBodyBytes: 10 });
    expect(untrusted).toMatchObject({ ok: false, reason: 'tls' });
  });

  it('never follows redirects and keeps at most the requested body bytes', async () => {
    server.behave('moved', () => ({ status: 307, headers: { location: '/cb/target' } }));
    server.behave('big', () => ({ status: 200, body: 'x'.repeat(5000) }));
    const c = client(true, { ca: pki.caPem });
    expect(await c.send({ method: 'GET', url: server.url('moved'), keepBodyBytes: 10 })).toMatchObject({ ok: true, status: 307 });
    expect(server.requests('target')).toEqual([]);
    const big = await c.send({ method: 'GET', url: server.url('big'), keepBodyBytes: 1024 });
    expect(big.ok && big.body.length).toBe(1024);
    expect(big.ok && big.truncated).toBe(true);
  });

  // Many callbacks on one origin (a webhook platform), a subscriber that answers each request in time but not
  // at once: requests waiting for one of the origin's connections must not spend their timeout waiting.
  it('counts the total timeout from the moment a request has its connection, not while it waits for one', async () => {
    server.behave('slow', () => 'hang');
    const c = client(true, { ca: pki.caPem, totalMs: 400, connectionsPerOrigin: 2 });
    const answering = setInterval(() => server.answerHanging(204), 150);
    try {
      const results = await Promise.all(Array.from({ length: 8 }, () => c.send({ method: 'POST', url: server.url('slow'), body: Buffer.from('x'), keepBodyBytes: 0 })));
      expect(results.map((r) => (r.ok ? r.status : r.reason))).toEqual(Array(8).fill(204));
    } finally {
      clearInterval(answering);
    }
  });

  it('gives a request up unsent, as busy, when the origin\'s connections stay taken past the queue wait', async () => {
    server.behave('taken', () => 'hang');
    const c = client(true, { ca: pki.caPem, queueMs: 100, connectionsPerOrigin: 1 });
    const first = c.send({ method: 'POST', url: server.url('taken'), body: Buffer.from('x'), keepBodyBytes: 0 });
    await eventually(() => server.requests('taken').length === 1);
    const second = await c.send({ method: 'POST', url: server.url('taken'), body: Buffer.from('y'), keepBodyBytes: 0 });
    expect(second).toMatchObject({ ok: false, reason: 'busy' });
    expect(server.requests('taken')).toHaveLength(1);
    server.answerHanging(204);
    expect(await first).toMatchObject({ ok: true, status: 204 });
  });

  // A tarpit (connections accepted, never answered) held a worker per request for the whole timeout,
  // so a few such origins, or many names on one wildcard DNS, held every delivery worker.
  it('sends at most SLOW_ORIGINS_CONCURRENCY requests at once to origins still timing out a timeout after they began to, refusing more at once as busy', async () => {
    server.behave('tarpit', () => 'hang');
    // Long enough for the requests in flight to be answered in time below, on a busy machine too.
    const c = client(true, { ca: pki.caPem, totalMs: 2_000, connectionsPerOrigin: 2 * SLOW_ORIGINS_CONCURRENCY });
    const tarpit = server.url('tarpit');
    // One hiccup, even of a subscriber's three callbacks notified together, is not yet a slow origin:
    // it is admitted as before.
    const together = Array.from({ length: 3 }, () => c.send({ method: 'POST', url: tarpit, body: Buffer.from('x'), keepBodyBytes: 0 }));
    expect((await Promise.all(together)).map((r) => (r.ok ? r.status : r.reason))).toEqual(['timeout', 'timeout', 'timeout']);
    server.releaseHanging();
    const first = Array.from({ length: SLOW_ORIGINS_CONCURRENCY + 1 }, () => c.send({ method: 'POST', url: tarpit, body: Buffer.from('x'), keepBodyBytes: 0 }));
    expect(c.admits(tarpit)).toBe(true);
    expect((await Promise.all(first)).map((r) => (r.ok ? r.status : r.reason))).toEqual(Array(SLOW_ORIGINS_CONCURRENCY + 1).fill('timeout'));
    server.releaseHanging();
    expect(c.admits(tarpit)).toBe(true);

    const sent = server.requests('tarpit').length;
    const inFlight = Array.from({ length: SLOW_ORIGINS_CONCURRENCY }, () => c.send({ method: 'POST', url: tarpit, body: Buffer.from('x'), keepBodyBytes: 0 }));
    await eventually(() => server.requests('tarpit').length === sent + SLOW_ORIGINS_CONCURRENCY);
    expect(c.admits(tarpit)).toBe(false);
    expect(await c.send({ method: 'POST', url: tarpit, body: Buffer.from('y'), keepBodyBytes: 0 })).toMatchObject({ ok: false, reason: 'busy' });
    expect(server.requests('tarpit')).toHaveLength(sent + SLOW_ORIGINS_CONCURRENCY);
    // Another origin (the same server by another name) answers in time: it is not held back.
    expect(c.admits(server.url('tarpit', '', '127.0.0.1'))).toBe(true);

    // An answer in time ends the origin's slow spell.
    server.answerHanging(204);
    expect((await Promise.all(inFlight)).map((r) => r.ok)).toEqual(Array(SLOW_ORIGINS_CONCURRENCY).fill(true));
    server.behave('tarpit', () => ({ status: 204 }));
    expect(await c.send({ method: 'POST', url: tarpit, body: Buffer.from('z'), keepBodyBytes: 0 })).toMatchObject({ ok: true, status: 204 });
  });

  it('gives up after the total timeout', async () => {
    server.behave('stuck', () => 'hang');
    const started = Date.now();
    const result = await client(true, { ca: pki.caPem, totalMs: 300 }).send({ method: 'GET', url: server.url('stuck'), keepBodyBytes: 10 });
    expect(result).toMatchObject({ ok: false, reason: 'timeout' });
    expect(Date.now() - started).toBeLessThan(3000);
    server.releaseHanging();
  });
});

// An attacker's audit: subscriptions to names whose DNS never answers (1 a second) queued every later lookup on
// libuv's thread pool, two at a time, 10 s each; real subscribers' verifications and deliveries timed out.
describe('callback host names', () => {
  it('resolves each name on its own: names whose DNS never answers hold up no other, and fail as timeouts', async () => {
    const dns = await dnsServer({ 'known.test': '127.0.0.1' });
    const resolver = new Resolver({ timeout: 500, tries: 2 });
    resolver.setServers([dns.address]);
    const client = createOutboundClient({ allowPrivateAddresses: false, userAgent: 'test', resolver });
    try {
      const started = performance.now();
      const silent = Array.from({ length: 40 }, (_, n) => client.send({ method: 'GET', url: `https://silent-${n}.test/cb`, keepBodyBytes: 0 }));
      // Answered at once, however many lookups wait: its address is loopback, so it is refused before any connection.
      expect(await client.send({ method: 'GET', url: 'https://known.test/cb', keepBodyBytes: 0 })).toMatchObject({ ok: false, reason: 'blocked' });
      expect(performance.now() - started).toBeLessThan(400);
      for (const result of await Promise.all(silent)) expect(result).toMatchObject({ ok: false, reason: 'timeout' });
      // Asked as given, no search domain appended.
      expect(new Set(dns.queries)).toContain('silent-39.test');
      expect(dns.queries.every((name) => name.endsWith('.test'))).toBe(true);
    } finally {
      await client.close();
      dns.close();
    }
  });

  it('refuses a name with any private address among public ones, whichever comes first: the connection may go to any of them', async () => {
    const dns = await dnsServer({ 'mixed.test': ['93.184.216.34', '10.0.0.7'] });
    const resolver = new Resolver({ timeout: 500, tries: 2 });
    resolver.setServers([dns.address]);
    const client = createOutboundClient({ allowPrivateAddresses: false, userAgent: 'test', resolver });
    try {
      expect(await client.send({ method: 'GET', url: 'https://mixed.test/cb', keepBodyBytes: 0 })).toMatchObject({ ok: false, reason: 'blocked' });
    } finally {
      await client.close();
      dns.close();
    }
  });
});
