import { createHmac } from 'node:crypto';
import { Resolver } from 'node:dns/promises';
import { once } from 'node:events';
import { connect } from 'node:net';
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { topicLinkHeader, TOPICS, type Snapshot } from '@reviews/domain';
import { createMetrics } from '@reviews/runtime';
import { sweepExpired } from '../src/distribution.js';
import { createHubMetrics } from '../src/metrics.js';
import { createOutboundClient } from '../src/outbound.js';
import { openFileSubscriptionStore } from '../src/store/file-store.js';
import type { SubscriptionStore } from '../src/store/subscription-store.js';
import { subscriptionKey, type Subscription } from '../src/subscription.js';
import { UNSUBSCRIBE_MARK_MS, verifyIntent, VERIFICATION_DEADLINE_MS } from '../src/verification.js';
import {
  capturingLogger,
  createTestPki,
  defaultBehaviour,
  dnsServer,
  HUB_URL,
  metricValue,
  silentLogger,
  snapshotFor,
  startHub,
  Subscriber,
  tempDir,
  TestFollower,
  TOPIC_URLS,
  waitFor,
  type LogLine,
  type Received,
  type Reply,
  type RunningHub,
  type TestHubOptions,
  type TestPki,
} from './support.js';
import { sampleSubscription } from './store-contract.js';

let pki: TestPki;
let subscriber: Subscriber;
let follower: TestFollower;
let hub: RunningHub;
let dir: { path: string; remove: () => Promise<void> };
let seed = 100;

beforeAll(async () => {
  pki = await createTestPki();
  subscriber = await Subscriber.start(pki);
  dir = await tempDir('websub-hub-');
  follower = new TestFollower();
  follower.publish(snapshotFor(seed));
  hub = await startHub({ pki, dataDir: dir.path, follower });
});

afterAll(async () => {
  await hub?.stop();
  await subscriber?.close();
  await dir?.remove();
});

/**
 * Publish a new dataset version (every topic's bytes change) and wait until the hub queued its
 * notifications: on the shared hub unless a test's own hub and follower are given.
 */
async function publishChange(on: { hub: RunningHub; follower: TestFollower } = { hub, follower }): Promise<Snapshot> {
  const snapshot = snapshotFor(++seed);
  on.follower.publish(snapshot);
  await waitFor(
    async () => (await Promise.all(TOPICS.map(async (t) => (await on.hub.store.topicState(t))?.etag === snapshot.topic(t).identity.etag))).every(Boolean),
    5000,
    'change announced on every topic',
  );
  return snapshot;
}

const stored = (callback: string, topicUrl: string = TOPIC_URLS.reviews): Promise<Subscription | null> => hub.store.get(subscriptionKey(topicUrl, callback));

async function subscribe(callback: string, extra: Record<string, string> = {}, topicUrl: string = TOPIC_URLS.reviews): Promise<void> {
  const res = await hub.post({ 'hub.mode': 'subscribe', 'hub.topic': topicUrl, 'hub.callback': callback, ...extra });
  expect(res.status).toBe(202);
}

/** Subscribe and wait until the verification was answered and applied. */
async function subscribeVerified(name: string, extra: Record<string, string> = {}, topicUrl: string = TOPIC_URLS.reviews): Promise<Subscription> {
  const callback = subscriber.url(name);
  const before = subscriber.verifications(name).length;
  const previous = await stored(callback, topicUrl);
  await subscribe(callback, extra, topicUrl);
  await waitFor(async () => {
    const now = await stored(callback, topicUrl);
    return subscriber.verifications(name).length > before && now !== null && now.requestedAt !== previous?.requestedAt;
  }, 5000, `verified subscription ${name}`);
  return (await stored(callback, topicUrl)) as Subscription;
}

/** The hub's challenge in a verification request (the callback's own colliding one comes first). */
const challengeIn = (req: Received): string => req.query.getAll('hub.challenge').at(-1) ?? '';

/** A promise the test settles when it chooses, e.g. to let a held answer go. */
function heldUntilReleased(): { held: Promise<void>; release: () => void } {
  let release = (): void => undefined;
  const held = new Promise<void>((resolve) => (release = resolve));
  return { held, release };
}

/** A hub of one test's own, with its own limits (and environment), stopped and its directory removed after `run`. */
async function withOwnHub(options: Pick<TestHubOptions, 'env' | 'limits' | 'wrapStore'>, run: (running: RunningHub) => Promise<void>): Promise<void> {
  const dir2 = await tempDir('websub-own-');
  const running = await startHub({ pki, dataDir: dir2.path, follower, ...options });
  try {
    await run(running);
  } finally {
    await running.stop();
    await dir2.remove();
  }
}

/** Wait until the hub finished processing a verification it sent to `name` (metrics are bumped after the answer). */
async function verificationsSettled(mode: string, outcome: string, atLeast: number): Promise<void> {
  await waitFor(async () => (await metricValue(hub.metrics, 'websub_verifications_total', { mode, outcome })) >= atLeast, 5000, `${mode}/${outcome} verifications`);
}

describe('synchronous refusals never reach the callback', () => {
  const valid = (name: string) => ({ 'hub.mode': 'subscribe', 'hub.topic': TOPIC_URLS.reviews, 'hub.callback': subscriber.url(name) });
  const cases: Array<[string, () => Record<string, string> | string, RegExp]> = [
    ['missing hub.mode', () => ({ 'hub.topic': TOPIC_URLS.reviews, 'hub.callback': subscriber.url('r1') }), /hub\.mode/],
    ['invalid hub.mode', () => ({ ...valid('r2'), 'hub.mode': 'follow' }), /hub\.mode/],
    ['hub.mode=publish', () => ({ ...valid('r3'), 'hub.mode': 'publish' }), /publish/],
    ['missing hub.topic', () => ({ 'hub.mode': 'subscribe', 'hub.callback': subscriber.url('r4') }), /hub\.topic/],
    ['unknown topic', () => ({ ...valid('r5'), 'hub.topic': `${TOPIC_URLS.reviews}x` }), /hub\.topic/],
    ['topic with an escaped reserved character', () => ({ ...valid('r6'), 'hub.topic': 'https://reviews.example.com/api%2Ffeed.json' }), /hub\.topic/],
    // Scheme and host are case-insensitive (RFC 3986 §6.2.2.1), the path is not.
    ['topic path in another letter case', () => ({ ...valid('r23'), 'hub.topic': 'https://reviews.example.com/Reviews.json' }), /hub\.topic/],
    // The URL parser would strip them and find the topic; they are no part of a URL.
    ['topic with a trailing newline', () => ({ ...valid('r24'), 'hub.topic': `${TOPIC_URLS.reviews}\n` }), /^hub\.topic: must not contain whitespace/],
    // Not RFC 3986 URIs with an authority, so equivalent to no topic; the WHATWG parser would repair each into one.
    ['topic without // (https:host)', () => ({ ...valid('r35'), 'hub.topic': 'https:reviews.example.com/reviews.json' }), /^hub\.topic: must start with https:\/\/ and a host/],
    ['topic with one slash (https:/host)', () => ({ ...valid('r36'), 'hub.topic': 'https:/reviews.example.com/reviews.json' }), /^hub\.topic: must start with https:\/\/ and a host/],
    ['topic with an empty authority (https:///host)', () => ({ ...valid('r37'), 'hub.topic': 'https:///reviews.example.com/reviews.json' }), /^hub\.topic: must start with https:\/\/ and a host/],
    ['topic with an escaped scheme letter', () => ({ ...valid('r38'), 'hub.topic': 'h%74tps://reviews.example.com/reviews.json' }), /^hub\.topic: must start with https:\/\/ and a host/],
    ['topic with backslashes for slashes', () => ({ ...valid('r39'), 'hub.topic': 'https:\\\\reviews.example.com\\api\\feed.json' }), /^hub\.topic: must not contain a backslash/],
    // A security audit: each normalises to a topic, and was stored and verified in a spelling of thousands of characters.
    ['topic over 2048 characters in dot segments', () => `hub.mode=subscribe&hub.topic=https://reviews.example.com${'/.'.repeat(7950)}/reviews.json&hub.callback=${encodeURIComponent(subscriber.url('r40'))}`, /^hub\.topic: must be at most 2048 characters once percent-encoded .*this one is 15940\)\n$/],
    ['topic with a port of 7,000 leading zeros', () => ({ ...valid('r41'), 'hub.topic': `https://reviews.example.com:${'0'.repeat(7000)}443/reviews.json` }), /^hub\.topic: must be at most 2048 characters once percent-encoded/],
    // 740 characters as sent, 4,240 percent-encoded: IDNA maps each soft hyphen in a host to nothing.
    ['topic over 2048 characters once percent-encoded', () => ({ ...valid('r42'), 'hub.topic': `https://rev${'\u00AD'.repeat(700)}iews.example.com/reviews.json` }), /^hub\.topic: must be at most 2048 characters once percent-encoded .*this one is 4240\)\n$/],
    ['missing hub.callback', () => ({ 'hub.mode': 'subscribe', 'hub.topic': TOPIC_URLS.reviews }), /hub\.callback/],
    ['plain HTTP callback', () => ({ ...valid('r7'), 'hub.callback': `http://localhost:${subscriber.port}/cb/r7` }), /^hub\.callback: must be an https: URL\n$/],
    ['callback with userinfo', () => ({ ...valid('r8'), 'hub.callback': `https://user:pw@localhost:${subscriber.port}/cb/r8` }), /user information/],
    ['callback with a fragment', () => ({ ...valid('r9'), 'hub.callback': `${subscriber.url('r9')}#frag` }), /fragment/],
    ['callback over 2048 characters', () => ({ ...valid('r10'), 'hub.callback': `${subscriber.url('r10')}?pad=${'a'.repeat(2048)}` }), /2048/],
    // An attacker's audit: under 2048 as sent, six times that as the hub stores and requests it.
    ['callback over 2048 characters once percent-encoded', () => ({ ...valid('r25'), 'hub.callback': `${subscriber.url('r25')}?pad=${'😀'.repeat(1000)}` }), /^hub\.callback: must be at most 2048 characters once percent-encoded/],
    ['relative callback', () => ({ ...valid('r11'), 'hub.callback': '/cb/r11' }), /absolute/],
    ['lease 0', () => ({ ...valid('r12'), 'hub.lease_seconds': '0' }), /positive integer/],
    ['negative lease', () => ({ ...valid('r13'), 'hub.lease_seconds': '-5' }), /positive integer/],
    ['fractional lease', () => ({ ...valid('r14'), 'hub.lease_seconds': '1.5' }), /positive integer/],
    ['non-numeric lease', () => ({ ...valid('r15'), 'hub.lease_seconds': 'week' }), /positive integer/],
    ['empty secret', () => ({ ...valid('r16'), 'hub.secret': '' }), /hub\.secret/],
    ['secret of 200 bytes', () => ({ ...valid('r17'), 'hub.secret': 'é'.repeat(100) }), /200 bytes/],
    ['repeated hub.mode', () => `hub.mode=subscribe&hub.mode=unsubscribe&hub.topic=${encodeURIComponent(TOPIC_URLS.reviews)}&hub.callback=${encodeURIComponent(subscriber.url('r18'))}`, /more than once/],
    // Decoded leniently, %FF would become U+FFFD and the hub would verify /cb/r20%EF%BF%BD, a URL nobody gave.
    ['callback not UTF-8 once percent-decoded', () => `${new URLSearchParams(valid('r20'))}%FF`, /^hub\.callback: is not valid UTF-8/],
    ['a field name not UTF-8', () => `${new URLSearchParams(valid('r21'))}&x%C0%AF=1`, /^x%C0%AF \(a field name\): is not valid UTF-8/],
    ['an ignored parameter not UTF-8', () => `${new URLSearchParams(valid('r22'))}&hub.verify_token=%ED%A0%80`, /^hub\.verify_token: is not valid UTF-8/],
    // Nothing listens on port 0: the verification could never succeed.
    ['callback on port 0', () => ({ ...valid('r25'), 'hub.callback': `https://localhost:0/cb/r25` }), /^hub\.callback: must not use port 0/],
    // Not RFC 3986 absolute URIs with an authority; the WHATWG parser would repair each into another URL.
    ['callback without a host (https:///cb)', () => ({ ...valid('r26'), 'hub.callback': 'https:///cb/r26' }), /^hub\.callback: must start with https:\/\/ and a host/],
    ['callback without // (https:host)', () => ({ ...valid('r27'), 'hub.callback': `https:localhost:${subscriber.port}/cb/r27` }), /^hub\.callback: must start with https:\/\/ and a host/],
    ['callback with one slash (https:/host)', () => ({ ...valid('r28'), 'hub.callback': `https:/localhost:${subscriber.port}/cb/r28` }), /^hub\.callback: must start with https:\/\/ and a host/],
    ['callback with backslashes for slashes', () => ({ ...valid('r29'), 'hub.callback': `https:\\\\localhost:${subscriber.port}\\cb\\r29` }), /^hub\.callback: must not contain a backslash/],
    ['callback with a backslash after the host', () => ({ ...valid('r30'), 'hub.callback': `https://localhost:${subscriber.port}\\cb/r30` }), /^hub\.callback: must not contain a backslash/],
    ['callback host with an empty label', () => ({ ...valid('r31'), 'hub.callback': 'https://a..b/cb/r31' }), /^hub\.callback: host a\.\.b is not a valid DNS name/],
    ['callback host with a label that is not punycode', () => ({ ...valid('r32'), 'hub.callback': 'https://xn--zz.example/cb/r32' }), /^hub\.callback: host xn--zz\.example is not a valid DNS name/],
    ['callback host with a label starting with a hyphen', () => ({ ...valid('r33'), 'hub.callback': 'https://-a.example/cb/r33' }), /^hub\.callback: host -a\.example is not a valid DNS name/],
    // URLSearchParams would keep it in the first name ("\uFEFFhub.mode") and report hub.mode missing.
    ['a body starting with a UTF-8 byte order mark', () => `\uFEFF${new URLSearchParams(valid('r34'))}`, /^The body starts with a UTF-8 byte order mark/],
  ];
  it.each(cases)('%s → 400 text/plain', async (_label, form, reason) => {
    const res = await hub.post(form());
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(res.text).toMatch(reason);
  });

  it('counts each refusal under the mode it asked for: an operator sees which requests go wrong', async () => {
    const before = await metricValue(hub.metrics, 'websub_requests_total', { mode: 'unsubscribe', outcome: 'rejected' });
    expect((await hub.post({ 'hub.mode': 'unsubscribe', 'hub.topic': `${TOPIC_URLS.reviews}x`, 'hub.callback': subscriber.url('r35') })).status).toBe(400);
    expect(await metricValue(hub.metrics, 'websub_requests_total', { mode: 'unsubscribe', outcome: 'rejected' })).toBe(before + 1);
  });

  it('takes a topic spelled in 2048 characters, and verifies it in that spelling', async () => {
    const spelling = `https://reviews.example.com${'/.'.repeat(1004)}/reviews.json`;
    expect(spelling).toHaveLength(2048);
    await subscribe(subscriber.url('topic2048'), {}, spelling);
    await waitFor(() => subscriber.verifications('topic2048').length === 1, 5000, 'verification');
    expect(subscriber.verifications('topic2048')[0]?.query.get('hub.topic')).toBe(spelling);
  });

  it('takes a secret of 199 bytes, the most W3C WebSub allows (fewer than 200)', async () => {
    const res = await hub.post({ ...valid('secret199'), 'hub.secret': `${'é'.repeat(99)}x` });
    expect(res.status).toBe(202);
  });

  it('wrong content type → 415, other methods → 405 with Allow, the same headers for HEAD as for GET', async () => {
    const json = await hub.post(JSON.stringify(valid('r19')), 'application/json');
    expect(json.status).toBe(415);
    for (const method of ['GET', 'PUT', 'DELETE']) {
      const res = await fetch(hub.url, { method, ...(method === 'PUT' ? { body: 'x' } : {}) });
      expect([method, res.status, res.headers.get('allow')]).toEqual([method, 405, 'POST, OPTIONS']);
      expect(res.headers.get('access-control-allow-origin')).toBe('*');
      // A GET's 405 is cacheable by default: a shared cache kept it.
      expect(res.headers.get('cache-control')).toBe('no-store');
    }
    const [get, head] = await Promise.all([fetch(hub.url), fetch(hub.url, { method: 'HEAD' })]);
    expect(head.status).toBe(405);
    expect(head.headers.get('content-length')).toBe(get.headers.get('content-length'));
  });

  // Past its limit the hub used to stop reading the body: the connection's next request stalled 60 s
  // into a 408. Draining whatever came instead kept it reading a declared terabyte for a minute.
  describe('a body over the limit', () => {
    const opened = async () => {
      const socket = connect(Number(new URL(hub.url).port), '127.0.0.1');
      await once(socket, 'connect');
      const received: Buffer[] = [];
      socket.on('data', (chunk: Buffer) => received.push(chunk));
      socket.on('error', () => undefined); // writing after the hub closed
      const text = () => Buffer.concat(received).toString('latin1');
      return { socket, text, answers: () => text().match(/HTTP\/1\.1 \d{3}/g) ?? [] };
    };
    const post = (length: number, extraHeaders = '') =>
      `POST /api/websub/hub HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${length}\r\n${extraHeaders}\r\n`;

    // The hub used to answer only once 16 KiB of the body had come: a client waiting for an answer first never got one.
    it.each([
      ['without Expect', ''],
      ['with Expect: 100-continue', 'Expect: 100-continue\r\n'],
    ])('declared over the limit → 413 before any of the body is sent (%s)', async (_, expectHeader) => {
      const { socket, text } = await opened();
      socket.write(post(5_000_000, expectHeader));
      await waitFor(() => / 413 /.test(text()), 5000, 'the 413 without a body byte sent');
      socket.destroy();
      expect(text()).toMatch(/\r\nconnection: close\r\n/i);
      // Not invited to send the body first.
      expect(text()).toMatch(/^HTTP\/1\.1 413 /);
    });

    it('declared within the allowance → 413 while the client still sends, the rest dropped, and the connection carries the next request', async () => {
      const { socket, answers } = await opened();
      const body = `hub.mode=subscribe&x=${'a'.repeat(500_000)}`;
      socket.write(post(body.length));
      socket.write(body.slice(0, 100_000));
      await waitFor(() => answers().length === 1, 5000, 'the 413 before the body ends');
      socket.write(body.slice(100_000));
      socket.write('GET /api/websub/hub HTTP/1.1\r\nHost: localhost\r\n\r\n');
      await waitFor(() => answers().length === 2, 5000, 'the next request answered on the same connection');
      socket.destroy();
      expect(answers()).toEqual(['HTTP/1.1 413', 'HTTP/1.1 405']);
    });

    // The review of the 100 Continue change: not invited, the client's body met a connection node:http had already closed (EPIPE).
    it('declared within the allowance with Expect: 100-continue → 413 without a 100, and the body sent anyway is read until the connection closes in stages', async () => {
      // Half-open, as a client that goes on sending after the hub's FIN (curl, Python) is.
      const socket = connect({ port: Number(new URL(hub.url).port), host: '127.0.0.1', allowHalfOpen: true });
      await once(socket, 'connect');
      let text = '';
      socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
      const written: Array<string | undefined> = [];
      socket.on('error', () => undefined);
      try {
        socket.write(post(20_000, 'Expect: 100-continue\r\n'));
        await waitFor(() => / 413 /.test(text), 5000, 'the 413');
        // In pieces, as a slow client sends: a connection closed under them is reset by the kernel (EPIPE).
        for (let piece = 0; piece < 4; piece++) {
          written.push(await new Promise<string | undefined>((resolve) => socket.write('a'.repeat(5_000), (error) => resolve((error as NodeJS.ErrnoException | null | undefined)?.code))));
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      } finally {
        socket.destroy();
      }
      expect(text).toMatch(/^HTTP\/1\.1 413 [^]*\r\nconnection: close\r\n/i);
      expect(written).toEqual([undefined, undefined, undefined, undefined]);
    });

    it('declared beyond it → 413 and the connection closes once the client stops sending', async () => {
      const { socket, text, answers } = await opened();
      const closed = once(socket, 'close');
      socket.write(post(1_000_000_000_000));
      socket.write('hub.mode=subscribe&x=' + 'a'.repeat(100_000));
      await closed;
      expect(answers()).toEqual(['HTTP/1.1 413']);
      expect(text()).toMatch(/\r\nconnection: close\r\n/i);
    });
  });

  it('OPTIONS is a CORS preflight: 204 with Allow and the allowed methods, and the POST it clears is readable cross-origin', async () => {
    const preflight = await fetch(hub.url, {
      method: 'OPTIONS',
      headers: { Origin: 'https://app.example', 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'content-type' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('allow')).toBe('POST, OPTIONS');
    expect(preflight.headers.get('access-control-allow-methods')).toBe('POST, OPTIONS');
    expect(preflight.headers.get('access-control-allow-origin')).toBe('*');
    expect(preflight.headers.get('access-control-allow-headers')).toBe('content-type');
    expect(preflight.headers.get('access-control-max-age')).toBe('86400');
    expect(await preflight.text()).toBe('');
    const refused = await hub.post({ 'hub.mode': 'subscribe' });
    expect(refused.status).toBe(400);
    expect(refused.headers.get('access-control-allow-origin')).toBe('*');
  });

  it('none of the refused requests contacted a callback', () => {
    for (let i = 1; i <= 42; i++) expect(subscriber.requests(`r${i}`)).toEqual([]);
  });

  it('a content-coded body → 415 naming the coding, with Accept-Encoding: identity; identity is accepted', async () => {
    const coded = await hub.post(valid('r35'), undefined, { 'content-encoding': 'gzip' });
    expect(coded.status).toBe(415);
    expect(coded.headers.get('accept-encoding')).toBe('identity');
    expect(coded.text).toMatch(/Content-Encoding: gzip/);
    expect((await hub.post(valid('identity-coded'), undefined, { 'content-encoding': 'identity' })).status).toBe(202);
  });

  it('accepts internationalised callback hosts, spelled in Unicode or in punycode', async () => {
    for (const host of ['bücher.invalid', 'xn--bcher-kva.invalid', 'яндекс.invalid', 'a.example.']) {
      const res = await hub.post({ ...valid('idn'), 'hub.callback': `https://${host}/cb/idn` });
      expect([host, res.status]).toEqual([host, 202]);
    }
  });
});

describe('subscription state table (spec §3)', () => {
  it('(none) → pending → active: a challenge GET with every parameter, then notifications with the exact topic bytes', async () => {
    const callback = subscriber.url('happy');
    await subscribeVerified('happy', { 'hub.verify': 'sync', 'unknown.param': 'ignored' });
    const [verification] = subscriber.verifications('happy');
    expect(verification?.query.get('hub.mode')).toBe('subscribe');
    expect(verification?.query.get('hub.topic')).toBe(TOPIC_URLS.reviews);
    expect(verification?.query.get('hub.lease_seconds')).toBe('600');
    expect(verification?.query.get('hub.challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(verification?.headers['user-agent']).toMatch(/reviews-websub-hub/);

    const snapshot = await publishChange();
    await waitFor(() => subscriber.notifications('happy').length === 1, 5000, 'notification');
    const [note] = subscriber.notifications('happy');
    const representation = snapshot.topic('reviews');
    expect(note?.body.equals(representation.identity.body)).toBe(true);
    expect(note?.headers['content-type']).toBe('application/json');
    expect(note?.headers['content-length']).toBe(String(representation.identity.body.length));
    expect(note?.headers.link).toBe(topicLinkHeader(snapshot.urls, 'reviews'));
    expect(note?.headers.link).toBe(`<${HUB_URL}>; rel="hub", <${TOPIC_URLS.reviews}>; rel="self"`);
    expect(note?.headers['x-hub-signature']).toBeUndefined();
    expect(note?.headers['user-agent']).toMatch(/reviews-websub-hub/);
    expect((await stored(callback))?.failures).toBe(0);
  });

  it('the Atom topic is delivered as application/atom+xml', async () => {
    await subscribeVerified('atom', {}, TOPIC_URLS.feedAtom);
    const snapshot = await publishChange();
    await waitFor(() => subscriber.notifications('atom').length === 1, 5000, 'atom notification');
    const [note] = subscriber.notifications('atom');
    expect(note?.headers['content-type']).toBe('application/atom+xml');
    expect(note?.body.equals(snapshot.topic('feedAtom').identity.body)).toBe(true);
    expect(note?.headers.link).toBe(`<${HUB_URL}>; rel="hub", <${TOPIC_URLS.feedAtom}>; rel="self"`);
  });

  // §5.3: the verification names "the topic URL given in the corresponding subscription request",
  // which a subscriber may compare byte for byte with what it sent.
  it('a topic spelled with escaped unreserved characters is the same topic, and verified in the spelling given', async () => {
    const callback = subscriber.url('escaped');
    await subscribe(callback, {}, 'https://reviews.example.com/api/%66eed%2Ejson');
    await waitFor(async () => (await stored(callback, TOPIC_URLS.feedJson)) !== null, 5000, 'escaped-topic subscription');
    expect(subscriber.verifications('escaped')[0]?.query.get('hub.topic')).toBe('https://reviews.example.com/api/%66eed%2Ejson');
  });

  it('a topic spelled with an escaped host letter or a dot segment is the same topic (RFC 3986 §6.2.2.2, §6.2.2.3)', async () => {
    const callback = subscriber.url('dot-segment');
    await subscribe(callback, {}, 'https://%72eviews.example.com/api/./feed.json');
    await waitFor(async () => (await stored(callback, TOPIC_URLS.feedJson)) !== null, 5000, 'subscription under the hub\'s own topic URL');
  });

  it('a topic spelled with another scheme or host case, or its default port, is the same topic, each request verified in its own spelling', async () => {
    const callback = subscriber.url('cased');
    await subscribe(callback, {}, 'HTTPS://Reviews.EXAMPLE.com:443/reviews.json');
    await waitFor(async () => (await stored(callback)) !== null, 5000, 'subscription under the hub\'s own topic URL');
    expect(subscriber.verifications('cased')[0]?.query.get('hub.topic')).toBe('HTTPS://Reviews.EXAMPLE.com:443/reviews.json');
    const res = await hub.post({ 'hub.mode': 'unsubscribe', 'hub.topic': 'https://REVIEWS.example.com:/reviews.json', 'hub.callback': callback });
    expect(res.status).toBe(202);
    await waitFor(async () => (await stored(callback)) === null, 5000, 'unsubscribed in yet another spelling');
    expect(subscriber.verifications('cased')[1]?.query.get('hub.topic')).toBe('https://REVIEWS.example.com:/reviews.json');
  });

  it.each<[string, string, (req: Received) => Reply]>([
    ['a wrong body', 'wrongbody', () => ({ status: 200, body: 'not-the-challenge' })],
    // An error or search page that repeats its query would otherwise confirm any subscription to its URL.
    ['a page holding the challenge among other text', 'echopage', (req) => ({ status: 200, body: `<p>No results for ${req.query.get('hub.challenge') ?? ''}</p>` })],
    ['a 404', 'notfound', () => ({ status: 404 })],
    ['a redirect (never followed)', 'redirect', () => ({ status: 302, headers: { location: '/cb/redirect-target' } })],
  ])('pending → rejected on %s: never activated', async (_label, name, reply) => {
    subscriber.behave(name, (req) => (req.method === 'GET' ? reply(req) : { status: 204 }));
    const outcome = name === 'wrongbody' || name === 'echopage' ? 'wrong_body' : 'wrong_status';
    const before = await metricValue(hub.metrics, 'websub_verifications_total', { mode: 'subscribe', outcome });
    await subscribe(subscriber.url(name));
    await waitFor(() => subscriber.verifications(name).length === 1, 5000, 'challenge');
    // The hub counts the outcome once it has read the answer; the subscription must never appear.
    await verificationsSettled('subscribe', outcome, before + 1);
    expect(await stored(subscriber.url(name))).toBeNull();
    expect(subscriber.requests('redirect-target')).toEqual([]);
  });

  it('active → removed on a verified unsubscribe: notifications stop', async () => {
    const callback = subscriber.url('leaver');
    await subscribeVerified('leaver');
    const res = await hub.post({ 'hub.mode': 'unsubscribe', 'hub.topic': TOPIC_URLS.reviews, 'hub.callback': callback, 'hub.lease_seconds': 'ignored-on-unsubscribe' });
    expect(res.status).toBe(202);
    await waitFor(async () => (await stored(callback)) === null, 5000, 'unsubscribed');
    const [check] = subscriber.verifications('leaver').filter((r) => r.query.get('hub.mode') === 'unsubscribe');
    expect(check?.query.get('hub.topic')).toBe(TOPIC_URLS.reviews);
    expect(Number(check?.query.get('hub.lease_seconds'))).toBeGreaterThan(0);
    // A later change reaches the other subscribers but not this one.
    await subscribeVerified('witness-unsub');
    await publishChange();
    await waitFor(() => subscriber.notifications('witness-unsub').length === 1, 5000, 'witness notification');
    expect(subscriber.notifications('leaver')).toEqual([]);
  });

  it('an unsubscribe the callback does not confirm changes nothing', async () => {
    const callback = subscriber.url('stayer');
    await subscribeVerified('stayer');
    subscriber.behave('stayer', (req) => (req.method === 'GET' && req.query.get('hub.mode') === 'unsubscribe' ? { status: 404 } : req.method === 'GET' ? 'echo' : { status: 204 }));
    const failedBefore = await metricValue(hub.metrics, 'websub_verifications_total', { mode: 'unsubscribe', outcome: 'wrong_status' });
    await hub.post({ 'hub.mode': 'unsubscribe', 'hub.topic': TOPIC_URLS.reviews, 'hub.callback': callback });
    await verificationsSettled('unsubscribe', 'wrong_status', failedBefore + 1);
    expect(await stored(callback)).not.toBeNull();
    await publishChange();
    await waitFor(() => subscriber.notifications('stayer').length === 1, 5000, 'still notified');
  });

  it('active → removed after 3 consecutive failures, with a denial naming the topic as the subscriber spelled it', async () => {
    const callback = subscriber.url('failing');
    await subscribe(callback, {}, 'https://REVIEWS.example.com/reviews.json');
    await waitFor(async () => (await stored(callback)) !== null, 5000, 'subscription to a topic in another host case');
    subscriber.behave('failing', (req) => (req.method === 'POST' ? { status: 500 } : req.query.has('hub.challenge') ? 'echo' : { status: 200 }));
    await publishChange();
    await waitFor(() => subscriber.requests('failing').some((r) => r.query.get('hub.mode') === 'denied'), 5000, 'denial');
    expect(subscriber.notifications('failing')).toHaveLength(3);
    const denial = subscriber.requests('failing').find((r) => r.query.get('hub.mode') === 'denied');
    expect(denial?.query.get('hub.topic')).toBe('https://REVIEWS.example.com/reviews.json');
    expect(denial?.query.get('hub.reason')).toBe('delivery-failed-3-times');
    expect(await stored(callback)).toBeNull();
    expect(await metricValue(hub.metrics, 'websub_denials_total', { reason: 'delivery-failed-3-times' })).toBeGreaterThanOrEqual(1);
    expect(await metricValue(hub.metrics, 'websub_delivery_retries_total', { topic: 'reviews' })).toBeGreaterThanOrEqual(2);
  });

  it('a redirect answering a notification is a failed delivery, never followed', async () => {
    const callback = subscriber.url('moved');
    await subscribeVerified('moved');
    subscriber.behave('moved', (req) => (req.method === 'POST' ? { status: 301, headers: { location: '/cb/moved-target' } } : 'echo'));
    const snapshot = await publishChange();
    await waitFor(async () => (await stored(callback))?.failures === 1, 5000, 'the first failure recorded');
    expect(await stored(callback)).toMatchObject({ lastStatus: 301 });
    expect((await stored(callback))?.deliveredEtag).not.toBe(snapshot.topic('reviews').identity.etag);
    expect(subscriber.requests('moved-target')).toEqual([]);
  });

  it('a 2xx resets the failure count', async () => {
    const callback = subscriber.url('flaky');
    await subscribeVerified('flaky');
    let posts = 0;
    subscriber.behave('flaky', (req) => (req.method === 'POST' ? (++posts % 3 === 0 ? { status: 204 } : { status: 503 }) : 'echo'));
    await publishChange();
    await waitFor(() => subscriber.notifications('flaky').length === 3, 5000, 'two failures then success');
    await waitFor(async () => (await stored(callback))?.failures === 0, 5000, 'reset');
    await publishChange();
    await waitFor(() => subscriber.notifications('flaky').length === 6, 5000, 'again two failures then success');
    expect(await stored(callback)).not.toBeNull();
    expect(subscriber.requests('flaky').some((r) => r.query.get('hub.mode') === 'denied')).toBe(false);
  });

  it('a 2xx is a success as soon as its headers arrive: a body still coming is ignored (§7), not waited for', async () => {
    const callback = subscriber.url('slow-body');
    await subscribeVerified('slow-body');
    const body = heldUntilReleased();
    subscriber.behave('slow-body', (req) => (req.method === 'POST' ? { status: 200, body: 'thanks', bodyWhen: body.held } : defaultBehaviour(req)));
    try {
      const snapshot = await publishChange();
      // Well before the 15 s total timeout that a delivery waiting for the body would run into.
      await waitFor(async () => (await stored(callback))?.deliveredEtag === snapshot.topic('reviews').identity.etag, 5000, 'acknowledged while its body is held');
      expect(await stored(callback)).toMatchObject({ failures: 0, lastStatus: 200 });
      expect(subscriber.notifications('slow-body')).toHaveLength(1);
    } finally {
      body.release();
    }
  });

  it('410 Gone removes the subscription at once, without retries or denial', async () => {
    const callback = subscriber.url('gone');
    await subscribeVerified('gone');
    subscriber.behave('gone', (req) => (req.method === 'POST' ? { status: 410 } : 'echo'));
    await publishChange();
    await waitFor(async () => (await stored(callback)) === null, 5000, 'removed on 410');
    expect(subscriber.notifications('gone')).toHaveLength(1);
    expect(subscriber.requests('gone').some((r) => r.query.get('hub.mode') === 'denied')).toBe(false);
  });
});

describe('no subscription oracle, single-use challenges', () => {
  it('answers an unsubscribe for an unknown subscription like any other (202), and creates nothing', async () => {
    const callback = subscriber.url('stranger');
    const before = await metricValue(hub.metrics, 'websub_verifications_total', { mode: 'unsubscribe', outcome: 'verified' });
    const res = await hub.post({ 'hub.mode': 'unsubscribe', 'hub.topic': TOPIC_URLS.reviews, 'hub.callback': callback });
    expect(res.status).toBe(202);
    await verificationsSettled('unsubscribe', 'verified', before + 1);
    expect(subscriber.verifications('stranger')[0]?.query.get('hub.lease_seconds')).toBe('0');
    expect(await stored(callback)).toBeNull();
  });

  it('never sends the same challenge twice', async () => {
    await subscribeVerified('challenges');
    await subscribeVerified('challenges');
    const challenges = subscriber.verifications('challenges').map((r) => r.query.get('hub.challenge'));
    expect(new Set(challenges).size).toBe(challenges.length);
  });
});

describe('request order (§5.1: a request overrides the state only once verified)', () => {
  let ordered: RunningHub;
  let orderedFollower: TestFollower;
  let orderedDir: { path: string; remove: () => Promise<void> };
  const { logger, lines } = capturingLogger();

  beforeAll(async () => {
    orderedDir = await tempDir('websub-order-');
    orderedFollower = new TestFollower();
    orderedFollower.publish(snapshotFor(++seed));
    ordered = await startHub({ pki, dataDir: orderedDir.path, follower: orderedFollower, logger });
  });
  afterAll(async () => {
    await ordered?.stop();
    await orderedDir?.remove();
  });

  const form = (mode: string, name: string, extra: Record<string, string> = {}) => ({ 'hub.mode': mode, 'hub.topic': TOPIC_URLS.reviews, 'hub.callback': subscriber.url(name), ...extra });
  const keyOf = (name: string) => subscriptionKey(TOPIC_URLS.reviews, subscriber.url(name));
  /** The hub's log lines about a verified `mode` request for `name`, once its outcome is applied (or not). */
  const settledLines = (name: string, mode: string): LogLine[] => lines.filter((l) => l.subscription === keyOf(name) && l.mode === mode && l.msg !== 'verification failed; subscription state unchanged');

  async function subscribeThrough(name: string): Promise<void> {
    expect((await ordered.post(form('subscribe', name))).status).toBe(202);
    await waitFor(async () => (await ordered.store.get(keyOf(name))) !== null, 5000, `${name} subscribed`);
  }

  /**
   * A subscribe whose challenge answer the callback holds back, overtaken by an unsubscribe it
   * confirms at once; the held answer goes out only once the unsubscribe took effect.
   */
  async function subscribeOvertakenByUnsubscribe(name: string): Promise<void> {
    const answer = heldUntilReleased();
    subscriber.behave(name, (req) =>
      req.method === 'GET' && req.query.get('hub.mode') === 'subscribe' ? { status: 200, body: challengeIn(req), answerWhen: answer.held } : defaultBehaviour(req),
    );
    const subscribesSettled = settledLines(name, 'subscribe').length;
    try {
      const challenges = subscriber.verifications(name).length;
      expect((await ordered.post(form('subscribe', name, { 'hub.lease_seconds': '5555' }))).status).toBe(202);
      await waitFor(() => subscriber.verifications(name).length === challenges + 1, 5000, 'the subscribe challenge, held');
      expect((await ordered.post(form('unsubscribe', name))).status).toBe(202);
      await waitFor(() => settledLines(name, 'unsubscribe').length === 1, 5000, 'the unsubscribe verified and applied');
      expect(await ordered.store.get(keyOf(name))).toBeNull();
    } finally {
      answer.release();
    }
    await waitFor(() => settledLines(name, 'subscribe').length === subscribesSettled + 1, 5000, 'the held subscribe verified and its outcome processed');
  }

  /** Publish a change and wait until a witness subscribed to the same topic got it. */
  async function changeDeliveredTo(witness: string): Promise<void> {
    const snapshot = snapshotFor(++seed);
    orderedFollower.publish(snapshot);
    const body = snapshot.topic('reviews').identity.body;
    await waitFor(() => subscriber.countReceived(witness, body) === 1, 5000, 'the change delivered to the witness');
  }

  it.each([
    ['an active subscription', true],
    ['no subscription yet', false],
  ])('from %s: an older subscribe verified after a newer unsubscribe does not bring the subscription back', async (_label, activeFirst) => {
    const name = `overtaken-${activeFirst ? 'active' : 'fresh'}`;
    const witness = `${name}-witness`;
    await subscribeThrough(witness);
    if (activeFirst) await subscribeThrough(name);
    await subscribeOvertakenByUnsubscribe(name);

    expect(await ordered.store.get(keyOf(name))).toBeNull();
    await changeDeliveredTo(witness);
    expect(subscriber.notifications(name)).toEqual([]);
  });

  it('what an unsubscribe leaves behind is forgotten once no older request can take effect any more', async () => {
    const name = 'marked';
    expect((await ordered.post(form('unsubscribe', name))).status).toBe(202);
    await waitFor(() => settledLines(name, 'unsubscribe').length === 1, 5000, 'the unsubscribe verified and applied');
    const left = async () => (await ordered.store.listRecords()).filter((r) => r.key === keyOf(name));
    const [mark] = await left();
    expect(mark).toMatchObject({ unsubscribed: true });
    const sweepAt = (t: number) => sweepExpired({ store: ordered.store, logger: silentLogger, now: () => t });
    const forgetAt = (mark?.requestedAt ?? 0) + UNSUBSCRIBE_MARK_MS;
    await sweepAt(forgetAt - 1);
    expect(await left()).toEqual([mark]);
    await sweepAt(forgetAt);
    expect(await left()).toEqual([]);
  });

  it('a verification that would take effect later than the deadline after its request changes nothing', async () => {
    const dir2 = await tempDir('websub-deadline-');
    const store = await openFileSubscriptionStore(dir2.path);
    const outbound = createOutboundClient({ allowPrivateAddresses: true, userAgent: 'test', tls: { ca: pki.caPem } });
    const metrics = createHubMetrics(createMetrics(), { subscriptionCounts: async () => ({ active: 0, expired: 0, pending: 0 }), queueDepth: async () => 0 });
    const requestedAt = Date.now();
    let clock = requestedAt;
    const deps = { store, outbound, metrics, logger: silentLogger, now: () => clock, lease: { defaultSeconds: 600, minSeconds: 60, maxSeconds: 3600 }, closing: () => false };
    /** Verify a subscribe of `name` whose callback answers when the clock stands `elapsedMs` after the request. */
    const subscribeAnsweredAfter = async (name: string, elapsedMs: number) => {
      clock = requestedAt;
      subscriber.behave(name, () => {
        clock = requestedAt + elapsedMs;
        return 'echo';
      });
      const callback = subscriber.url(name);
      const request = { mode: 'subscribe', topic: 'reviews', topicUrl: TOPIC_URLS.reviews, requestedTopicUrl: TOPIC_URLS.reviews, callback, callbackHost: `localhost:${subscriber.port}`, callbackHostKey: 'localhost', leaseSeconds: null, secret: null } as const;
      const outcome = await verifyIntent(request, requestedAt, deps);
      return { outcome, stored: await store.get(subscriptionKey(TOPIC_URLS.reviews, callback)) };
    };
    try {
      expect(await subscribeAnsweredAfter('deadline-met', VERIFICATION_DEADLINE_MS)).toEqual({ outcome: 'verified', stored: expect.objectContaining({ requestedAt }) });
      expect(await subscribeAnsweredAfter('deadline-missed', VERIFICATION_DEADLINE_MS + 1)).toEqual({ outcome: 'verified', stored: null });
    } finally {
      await outbound.close();
      await store.close();
      await dir2.remove();
    }
  });

  /**
   * verifyIntent of a subscribe to the callback `name`, on a store whose reads come at the times `reads`
   * gives (ms after the request, on the hub's clock), each failing or answering from a real store.
   */
  async function verifyWithReads(name: string, reads: ReadonlyArray<readonly [number, 'fails' | 'answers']>) {
    const dir2 = await tempDir(`websub-${name}-`);
    const fileStore = await openFileSubscriptionStore(dir2.path);
    const outbound = createOutboundClient({ allowPrivateAddresses: true, userAgent: 'test', tls: { ca: pki.caPem } });
    const registry = createMetrics();
    const metrics = createHubMetrics(registry, { subscriptionCounts: async () => ({ active: 0, expired: 0, pending: 0 }), queueDepth: async () => 0 });
    const { logger, lines } = capturingLogger();
    const requestedAt = Date.now();
    let clock = requestedAt;
    let read = 0;
    const store: SubscriptionStore = {
      ...fileStore,
      get: async (key) => {
        const [at, result] = reads[read++] ?? [Infinity, 'fails'];
        clock = requestedAt + at;
        if (result === 'fails') throw new Error('store unreachable');
        return fileStore.get(key);
      },
    };
    const deps = { store, outbound, metrics, logger, now: () => clock, lease: { defaultSeconds: 600, minSeconds: 60, maxSeconds: 3600 }, closing: () => false };
    const callback = subscriber.url(name);
    const request = { mode: 'subscribe', topic: 'reviews', topicUrl: TOPIC_URLS.reviews, requestedTopicUrl: TOPIC_URLS.reviews, callback, callbackHost: `localhost:${subscriber.port}`, callbackHostKey: 'localhost', leaseSeconds: null, secret: null } as const;
    try {
      return { outcome: await verifyIntent(request, requestedAt, deps), reads: read, lines, registry };
    } finally {
      await outbound.close();
      await fileStore.close();
      await dir2.remove();
    }
  }

  it('a request whose subscription cannot be read until its deadline is given up without a verification, logged and counted', async () => {
    // Each read fails 90 s after the last: the third, 4.5 minutes after the request, is too late to verify it
    // before its 5-minute deadline (the GET may take 25 s, the writes after it their time).
    const { outcome, reads, lines, registry } = await verifyWithReads('unreadable', [[90_000, 'fails'], [180_000, 'fails'], [270_000, 'fails']]);
    expect(outcome).toBe('store_unavailable');
    expect(reads).toBe(3);
    expect(subscriber.requests('unreadable')).toEqual([]);
    expect(await metricValue(registry, 'websub_verifications_total', { mode: 'subscribe', outcome: 'store_unavailable' })).toBe(1);
    expect(lines.filter((line) => line.level >= 40).map((line) => [line.level, line.msg])).toEqual([
      [40, "reading the subscription before its verification failed; retrying until the request's deadline"],
      [50, "verification given up: the subscription store did not answer in time to verify the request before its deadline; subscription state unchanged, the subscriber must ask again"],
    ]);
  });

  // A review: a read that succeeded a second before the deadline sent the handshake, which the subscriber confirmed, and then nothing was recorded.
  it('a request whose subscription is read too late to verify it before its deadline is given up without a verification', async () => {
    const { outcome, reads } = await verifyWithReads('read-late', [[210_000, 'fails'], [260_000, 'answers']]);
    expect(outcome).toBe('store_unavailable');
    expect(reads).toBe(2);
    expect(subscriber.requests('read-late')).toEqual([]);
  });
});

describe('callback query strings', () => {
  it('keeps the callback query byte for byte and appends the hub parameters after it', async () => {
    const own = '?token=a%20b+c&hub.challenge=theirs&x=%E2%9C%93';
    const callback = subscriber.url('query', own);
    await subscribe(callback);
    await waitFor(async () => (await stored(callback)) !== null, 5000, 'verified with query');
    const [verification] = subscriber.verifications('query');
    expect(verification?.target.startsWith(`/cb/query${own}&hub.mode=subscribe&`)).toBe(true);
    expect(verification?.query.getAll('hub.challenge')[0]).toBe('theirs');
    await publishChange();
    await waitFor(() => subscriber.notifications('query').length === 1, 5000, 'notification with query');
    expect(subscriber.notifications('query')[0]?.target).toBe(`/cb/query${own}`);
  });

  // URL's pathname + search, which the HTTP client built the target from, loses an empty query's `?`.
  it('notifies a callback ending in an empty query at that exact target, `?` included, as it was verified', async () => {
    const callback = subscriber.url('bare-query', '?');
    await subscribe(callback);
    await waitFor(async () => (await stored(callback)) !== null, 5000, 'verified with an empty query');
    expect(subscriber.verifications('bare-query')[0]?.target.startsWith('/cb/bare-query?hub.mode=subscribe&')).toBe(true);
    await publishChange();
    await waitFor(() => subscriber.notifications('bare-query').length === 1, 5000, 'notification to the empty query');
    expect(subscriber.notifications('bare-query')[0]?.target).toBe('/cb/bare-query?');
  });
});

describe('leases', () => {
  it.each([
    ['below the minimum', '5', '60'],
    ['above the maximum', '999999999999', '3600'],
    ['inside the bounds', '1200', '1200'],
  ])('a lease %s is clamped (%s → %s) and expires from the verification time', async (_label, asked, granted) => {
    const name = `lease-${asked}`;
    const started = Date.now();
    const subscription = await subscribeVerified(name, { 'hub.lease_seconds': asked });
    expect(subscriber.verifications(name)[0]?.query.get('hub.lease_seconds')).toBe(granted);
    expect(subscription.leaseSeconds).toBe(Number(granted));
    expect(subscription.expiresAt - subscription.verifiedAt).toBe(Number(granted) * 1000);
    expect(subscription.verifiedAt).toBeGreaterThanOrEqual(started);
  });

  it('an expired subscription gets nothing and is swept', async () => {
    const dir2 = await tempDir('websub-lease-');
    const follower2 = new TestFollower();
    follower2.publish(snapshotFor(++seed));
    const shortHub = await startHub({ pki, dataDir: dir2.path, follower: follower2, env: { WEBSUB_LEASE_MIN_SECONDS: '1', WEBSUB_LEASE_DEFAULT_SECONDS: '1' } });
    try {
      const callback = subscriber.url('expiring');
      const res = await shortHub.post({ 'hub.mode': 'subscribe', 'hub.topic': TOPIC_URLS.reviews, 'hub.callback': callback });
      expect(res.status).toBe(202);
      const key = subscriptionKey(TOPIC_URLS.reviews, callback);
      await waitFor(async () => (await shortHub.store.get(key)) !== null, 5000, 'short lease verified');
      await waitFor(async () => (await shortHub.store.get(key)) === null, 5000, 'swept after expiry');
      follower2.publish(snapshotFor(++seed));
      // The announcement is recorded after the (empty) fan-out: nothing was queued for the expired callback.
      await waitFor(async () => (await shortHub.store.topicState('reviews'))?.etag === follower2.current()?.topic('reviews').identity.etag, 5000, 'announced');
      expect(subscriber.notifications('expiring')).toEqual([]);
    } finally {
      await shortHub.stop();
      await dir2.remove();
    }
  });
});

describe('renewals and secrets', () => {
  const sign = (secret: string, body: Buffer) => `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

  it('re-subscribing keeps ONE subscription and rotates the secret only once verified', async () => {
    const callback = subscriber.url('rotate');
    await subscribeVerified('rotate', { 'hub.secret': 'first-secret' });
    await subscribeVerified('rotate', { 'hub.secret': 'first-secret' });
    expect((await hub.store.list()).filter((s) => s.callback === callback)).toHaveLength(1);

    let snapshot = await publishChange();
    await waitFor(() => subscriber.notifications('rotate').length === 1, 5000, 'one notification for two subscribes');
    expect(subscriber.notifications('rotate')[0]?.headers['x-hub-signature']).toBe(sign('first-secret', snapshot.topic('reviews').identity.body));

    await subscribeVerified('rotate', { 'hub.secret': 'second-secret' });
    snapshot = await publishChange();
    await waitFor(() => subscriber.notifications('rotate').length === 2, 5000, 'signed with the new secret');
    expect(subscriber.notifications('rotate')[1]?.headers['x-hub-signature']).toBe(sign('second-secret', snapshot.topic('reviews').identity.body));

    // A renewal the callback does not confirm leaves the old secret in force.
    subscriber.behave('rotate', (req) => (req.method === 'GET' ? { status: 200, body: 'nope' } : { status: 204 }));
    const wrongBefore = await metricValue(hub.metrics, 'websub_verifications_total', { mode: 'subscribe', outcome: 'wrong_body' });
    await subscribe(callback, { 'hub.secret': 'third-secret', 'hub.lease_seconds': '3600' });
    await verificationsSettled('subscribe', 'wrong_body', wrongBefore + 1);
    const kept = await stored(callback);
    expect(kept?.secret).toBe('second-secret');
    expect(kept?.leaseSeconds).toBe(600);
    snapshot = await publishChange();
    await waitFor(() => subscriber.notifications('rotate').length === 3, 5000, 'still signed with the old secret');
    expect(subscriber.notifications('rotate')[2]?.headers['x-hub-signature']).toBe(sign('second-secret', snapshot.topic('reviews').identity.body));

    // A verified renewal without a secret makes notifications unsigned.
    subscriber.behave('rotate', (req) => (req.method === 'GET' ? 'echo' : { status: 204 }));
    await subscribeVerified('rotate');
    await publishChange();
    await waitFor(() => subscriber.notifications('rotate').length === 4, 5000, 'unsigned');
    expect(subscriber.notifications('rotate')[3]?.headers['x-hub-signature']).toBeUndefined();
  });

  // The retry schedule is the subscription's: a change announced while a failed notification waits for its
  // retry used to go out at once, so three changes a second apart removed a subscriber down for two seconds.
  it('a change during the retry delay waits for the retry, which sends the newest content', async () => {
    const dir2 = await tempDir('websub-newest-');
    const follower2 = new TestFollower();
    follower2.publish(snapshotFor(++seed));
    // Long enough for three publishes on a loaded machine (at 1.5 s the retry once came between them).
    const retryDelayMs = 3_000;
    const retrying = await startHub({ pki, dataDir: dir2.path, follower: follower2, env: { WEBSUB_RETRY_DELAYS_MS: `0,${retryDelayMs}` } });
    const publishOn2 = async (): Promise<Buffer> => (await publishChange({ hub: retrying, follower: follower2 })).topic('reviews').identity.body;
    try {
      const callback = subscriber.url('newest');
      const key = subscriptionKey(TOPIC_URLS.reviews, callback);
      let posts = 0;
      subscriber.behave('newest', (req) => (req.method === 'POST' ? (++posts === 1 ? { status: 500 } : { status: 204 }) : 'echo'));
      expect((await retrying.post({ 'hub.mode': 'subscribe', 'hub.topic': TOPIC_URLS.reviews, 'hub.callback': callback })).status).toBe(202);
      await waitFor(async () => (await retrying.store.get(key)) !== null, 5000, 'verified subscription');

      const failed = await publishOn2();
      await waitFor(async () => (await retrying.store.get(key))?.failures === 1, 5000, 'first attempt failed and recorded');
      const failedAt = (await retrying.store.get(key))!.lastAttemptAt!;
      const latest = await publishOn2();
      const superseded = await publishOn2();
      const newest = await publishOn2();
      await waitFor(() => subscriber.countReceived('newest', newest) === 1, 10_000, 'the newest change, once the retry was due');
      const [first, second, ...more] = subscriber.notifications('newest').filter((n) => n.method === 'POST');
      // The failed content is never sent again, and the changes announced meanwhile go as the newest one, when the retry is due.
      expect([first?.body, second?.body, more]).toEqual([failed, newest, []]);
      expect(second!.at - failedAt).toBeGreaterThanOrEqual(retryDelayMs - 50);
      expect([latest, superseded].map((body) => subscriber.countReceived('newest', body))).toEqual([0, 0]);
      // Recorded once the 2xx is in, a moment after the subscriber saw the POST.
      await waitFor(async () => (await retrying.store.get(key))?.failures === 0, 5000, 'the success recorded');
    } finally {
      await retrying.stop();
      await dir2.remove();
    }
  });
});

describe('one notification at a time per subscription', () => {
  // A rollback of a bad publish: the content goes X -> P -> X. The change back to X was announced while P was
  // still on its way to a slow subscriber, whose record still said X: it was taken as already delivered, and the
  // subscriber kept P until some later change.
  it('a change reverted while the notification of it is on its way reaches the subscriber after it', async () => {
    await subscribeVerified('revert-slow');
    const reverted = follower.current()!;
    let answer = (): void => undefined;
    const held = new Promise<void>((resolve) => (answer = resolve));
    subscriber.behave('revert-slow', (req) => (req.method === 'POST' ? { status: 204, answerWhen: held } : 'echo'));
    const changed = await publishChange();
    await waitFor(() => subscriber.countReceived('revert-slow', changed.topic('reviews').identity.body) === 1, 5000, 'the change on its way');
    follower.publish(reverted);
    await waitFor(async () => (await hub.store.topicState('reviews'))?.etag === reverted.topic('reviews').identity.etag, 5000, 'the revert announced');
    answer();
    const revertedBody = reverted.topic('reviews').identity.body;
    await waitFor(() => subscriber.countReceived('revert-slow', revertedBody) === 1, 5000, 'the reverted content after it');
    expect(subscriber.notifications('revert-slow').filter((n) => n.method === 'POST').map((n) => n.body)).toEqual([changed.topic('reviews').identity.body, revertedBody]);
    await waitFor(async () => (await stored(subscriber.url('revert-slow')))?.deliveredEtag === reverted.topic('reviews').identity.etag, 5000, 'the reverted content recorded as delivered');
  });
});

describe('timeouts', () => {
  it('a callback that never answers fails verification and, once active, counts delivery failures', async () => {
    const dir2 = await tempDir('websub-timeout-');
    const follower2 = new TestFollower();
    follower2.publish(snapshotFor(++seed));
    const slowHub = await startHub({ pki, dataDir: dir2.path, follower: follower2, timeouts: { connectMs: 300, headersMs: 300, totalMs: 500 } });
    try {
      subscriber.behave('silent', () => 'hang');
      const res = await slowHub.post({ 'hub.mode': 'subscribe', 'hub.topic': TOPIC_URLS.reviews, 'hub.callback': subscriber.url('silent') });
      expect(res.status).toBe(202);
      await waitFor(async () => (await metricValue(slowHub.metrics, 'websub_verifications_total', { outcome: 'timeout' })) === 1, 5000, 'verification timeout');
      expect(await slowHub.store.get(subscriptionKey(TOPIC_URLS.reviews, subscriber.url('silent')))).toBeNull();

      subscriber.behave('slowpost', (req) => (req.method === 'POST' ? 'hang' : req.query.has('hub.challenge') ? 'echo' : { status: 200 }));
      await slowHub.post({ 'hub.mode': 'subscribe', 'hub.topic': TOPIC_URLS.reviews, 'hub.callback': subscriber.url('slowpost') });
      const key = subscriptionKey(TOPIC_URLS.reviews, subscriber.url('slowpost'));
      await waitFor(async () => (await slowHub.store.get(key)) !== null, 5000, 'slowpost verified');
      follower2.publish(snapshotFor(++seed));
      await waitFor(() => subscriber.requests('slowpost').some((r) => r.query.get('hub.mode') === 'denied'), 10000, 'denial after three timeouts');
      expect(await slowHub.store.get(key)).toBeNull();
      expect(subscriber.notifications('slowpost')).toHaveLength(3);
    } finally {
      await slowHub.stop();
      await dir2.remove();
    }
  });

  // The attacker audit's tarpit: callbacks that accept connections and never answer held every
  // delivery worker, so a notification to anyone else waited while they timed out, batch after batch.
  it('callbacks that never answer hold a bounded share of the delivery workers: the others are notified meanwhile', async () => {
    const dir2 = await tempDir('websub-tarpit-');
    const follower2 = new TestFollower();
    follower2.publish(snapshotFor(++seed));
    const tarpit = await Subscriber.start(pki);
    const slowHub = await startHub({ pki, dataDir: dir2.path, follower: follower2, limits: { deliveryConcurrency: 16 }, timeouts: { headersMs: 1_000, totalMs: 1_000 } });
    try {
      const tarpits = Array.from({ length: 80 }, (_, i) => `tarpit-${i}`);
      for (const name of tarpits) {
        tarpit.behave(name, (req) => (req.method === 'POST' ? 'hang' : 'echo'));
        expect((await slowHub.post({ 'hub.mode': 'subscribe', 'hub.topic': TOPIC_URLS.reviews, 'hub.callback': tarpit.url(name) })).status).toBe(202);
      }
      // Subscribed last, so its job is queued behind theirs.
      expect((await slowHub.post({ 'hub.mode': 'subscribe', 'hub.topic': TOPIC_URLS.reviews, 'hub.callback': subscriber.url('beside-tarpits') })).status).toBe(202);
      await waitFor(async () => (await slowHub.store.list()).length === tarpits.length + 1, 10_000, 'every subscription verified');
      const published = performance.now();
      follower2.publish(snapshotFor(++seed));
      await waitFor(() => subscriber.notifications('beside-tarpits').length === 1, 30_000, 'the notification beside the tarpits');
      // Held behind them it took 9.3 s (80 jobs, 8 at a time to their origin, 1 s each); with the gate 3.3 s.
      expect(performance.now() - published).toBeLessThan(6_000);
    } finally {
      await slowHub.stop();
      await tarpit.close();
      await dir2.remove();
    }
  }, 60_000);
});

describe('SSRF refusals with private callbacks disallowed', () => {
  it('refuses literal loopback addresses and localhost names synchronously and blocks names resolving to loopback at connect time', async () => {
    const dir2 = await tempDir('websub-ssrf-');
    const dns = await dnsServer({ 'loopback.test': '127.0.0.1' });
    const resolver = new Resolver({ timeout: 500, tries: 2 });
    resolver.setServers([dns.address]);
    const strict = await startHub({ pki, dataDir: dir2.path, follower, resolver, env: { WEBSUB_ALLOW_PRIVATE_CALLBACKS: 'false' } });
    try {
      // [::127.0.0.1] and [::8.8.8.8] are IPv4-compatible (deprecated ::/96), not the IPv4 addresses they spell.
      for (const host of ['127.0.0.1', '[::ffff:127.0.0.1]', '[::1]', '169.254.169.254', '10.0.0.1', '[fd00:ec2::254]', '100.64.0.1', '2130706433', '[::127.0.0.1]', '[::8.8.8.8]']) {
        const res = await strict.post({ 'hub.mode': 'subscribe', 'hub.topic': TOPIC_URLS.reviews, 'hub.callback': `https://${host}:${subscriber.port}/cb/ssrf-literal` });
        expect([host, res.status, res.text]).toEqual([host, 400, expect.stringMatching(/private, loopback or reserved/)]);
      }
      // A security audit: these were accepted with 202 and refused only at verification. RFC 6761 §6.3: they are loopback.
      for (const host of ['localhost', 'LOCALHOST', 'a.b.localhost', 'localhost.']) {
        const res = await strict.post({ 'hub.mode': 'subscribe', 'hub.topic': TOPIC_URLS.reviews, 'hub.callback': `https://${host}:${subscriber.port}/cb/ssrf-localhost` });
        expect([host, res.status, res.text]).toEqual([host, 400, expect.stringMatching(/^hub\.callback: must not point to a private, loopback or reserved address \(.*localhost\.? is loopback/)]);
      }
      const res = await strict.post({ 'hub.mode': 'subscribe', 'hub.topic': TOPIC_URLS.reviews, 'hub.callback': subscriber.url('ssrf-name', '', 'loopback.test') });
      expect(res.status).toBe(202);
      await waitFor(async () => (await metricValue(strict.metrics, 'websub_verifications_total', { outcome: 'blocked' })) === 1, 5000, 'blocked at connect');
      expect(subscriber.requests('ssrf-literal')).toEqual([]);
      expect(subscriber.requests('ssrf-localhost')).toEqual([]);
      expect(subscriber.requests('ssrf-name')).toEqual([]);
      expect(await strict.store.list()).toEqual([]);
    } finally {
      await strict.stop();
      await dir2.remove();
      dns.close();
    }
  });
});

describe('abuse limits', () => {
  it('rate-limits per client and per callback host with Retry-After, and caps pending verifications', async () => {
    const dir2 = await tempDir('websub-limits-');
    const limited = await startHub({
      pki,
      dataDir: dir2.path,
      follower,
      limits: { perClient: { burst: 3, perMinute: 1 }, perCallbackHost: { burst: 1000, perMinute: 1000 }, maxPendingVerifications: 1 },
    });
    const byHost = await startHub({ pki, dataDir: dir2.path, follower, limits: { perCallbackHost: { burst: 1, perMinute: 1 } } });
    try {
      subscriber.behave('pending-1', () => 'hang');
      const form = (name: string) => ({ 'hub.mode': 'subscribe', 'hub.topic': TOPIC_URLS.reviews, 'hub.callback': subscriber.url(name) });
      expect((await limited.post(form('pending-1'))).status).toBe(202);
      const overloaded = await limited.post(form('pending-2'));
      expect(overloaded.status).toBe(503);
      expect(Number(overloaded.headers.get('retry-after'))).toBeGreaterThan(0);
      expect((await limited.post(form('pending-3'))).status).toBe(503);
      const limitedRes = await limited.post(form('pending-4'));
      expect(limitedRes.status).toBe(429);
      expect(Number(limitedRes.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(limitedRes.headers.get('access-control-expose-headers')?.split(', ')).toContain('Retry-After');

      expect((await byHost.post(form('host-1'))).status).toBe(202);
      const hostLimited = await byHost.post(form('host-2'));
      expect(hostLimited.status).toBe(429);
      expect(hostLimited.text).toMatch(/callback host/);
      expect(Number(hostLimited.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(subscriber.requests('pending-2')).toEqual([]);
      expect(subscriber.requests('host-2')).toEqual([]);
      expect(await metricValue(limited.metrics, 'websub_requests_total', { outcome: 'overloaded' })).toBe(2);
    } finally {
      subscriber.releaseHanging();
      await Promise.all([limited.stop(), byHost.stop()]);
      await dir2.remove();
    }
  });
});

describe('WEBSUB_MAX_SUBSCRIPTIONS', () => {
  it('refuses a new subscription once the hub holds its maximum, with 503 and Retry-After, and still takes renewals and unsubscribes', async () => {
    await withOwnHub({ env: { WEBSUB_MAX_SUBSCRIPTIONS: '2' } }, async (running) => {
      const form = (name: string, mode = 'subscribe') => ({ 'hub.mode': mode, 'hub.topic': TOPIC_URLS.reviews, 'hub.callback': subscriber.url(name) });
      for (const name of ['max-1', 'max-2']) expect((await running.post(form(name))).status).toBe(202);
      await waitFor(async () => (await running.store.list()).length === 2, 10_000, 'two subscriptions');

      const full = await running.post(form('max-3'));
      expect([full.status, full.headers.get('retry-after'), full.text]).toEqual([503, '3600', 'The hub holds its maximum of 2 subscriptions; retry later.\n']);
      expect(subscriber.requests('max-3')).toEqual([]);
      expect(await metricValue(running.metrics, 'websub_requests_total', { mode: 'subscribe', outcome: 'full' })).toBe(1);

      // A renewal is no new subscription, and an unsubscribe is taken (its mark counts until it is swept, minutes later).
      expect((await running.post(form('max-1'))).status).toBe(202);
      expect((await running.post(form('max-2', 'unsubscribe'))).status).toBe(202);
      await waitFor(async () => (await running.store.list()).length === 1, 10_000, 'the unsubscribe verified');
    });
  });
});

describe('WEBSUB_MAX_SUBSCRIPTIONS while verifications are in flight, or the store fails', () => {
  const subscribe = (running: RunningHub, name: string) => running.post({ 'hub.mode': 'subscribe', 'hub.topic': TOPIC_URLS.reviews, 'hub.callback': subscriber.url(name) });
  /** A callback that takes a second to answer its challenge: its verification stays in flight meanwhile. */
  const slowEcho = (req: Received): Reply => (req.query.has('hub.challenge') ? { status: 200, body: req.query.getAll('hub.challenge').at(-1)!, delayMs: 1_000 } : { status: 204 });

  it('counts the subscribes still verifying: a burst while callbacks are slow cannot pass the cap', async () => {
    await withOwnHub({ env: { WEBSUB_MAX_SUBSCRIPTIONS: '2' } }, async (running) => {
      for (const name of ['slow-1', 'slow-2', 'slow-3']) subscriber.behave(name, slowEcho);
      expect([(await subscribe(running, 'slow-1')).status, (await subscribe(running, 'slow-2')).status, (await subscribe(running, 'slow-3')).status]).toEqual([202, 202, 503]);
    });
  });

  it('holds pending verifications to their maximum when requests wait for the count together', async () => {
    const slowCount = (store: SubscriptionStore): SubscriptionStore => ({ ...store, listRecords: () => new Promise((resolve) => setTimeout(() => resolve(store.listRecords()), 200)) });
    await withOwnHub({ limits: { maxPendingVerifications: 2 }, wrapStore: slowCount }, async (running) => {
      const names = Array.from({ length: 8 }, (_, i) => `count-wait-${i}`);
      for (const name of names) subscriber.behave(name, slowEcho);
      const statuses = await Promise.all(names.map((name) => subscribe(running, name).then((r) => r.status)));
      expect(statuses.filter((status) => status === 202)).toHaveLength(2);
      expect(statuses.filter((status) => status === 503)).toHaveLength(6);
    });
  });

  it('answers 503 while the store cannot count, and keeps running', async () => {
    await withOwnHub({ wrapStore: (store) => ({ ...store, listRecords: () => Promise.reject(new Error('listing stalled')) }) }, async (failing) => {
      for (const name of ['count-fails-1', 'count-fails-2']) {
        const refused = await subscribe(failing, name);
        expect([refused.status, refused.headers.get('retry-after')]).toEqual([503, '5']);
      }
      expect((await failing.post({ 'hub.mode': 'unsubscribe', 'hub.topic': TOPIC_URLS.reviews, 'hub.callback': subscriber.url('count-fails-1') })).status).toBe(202);
    });
  });

  it.each([
    [
      'read before its verification',
      (store: SubscriptionStore): SubscriptionStore => ({ ...store, get: () => Promise.reject(new Error('store unreachable')) }),
      "reading the subscription before its verification failed; retrying until the request's deadline",
      'verification not sent: the store failed as the hub was stopping; the subscriber must ask again',
    ],
    [
      "verified request's write",
      (store: SubscriptionStore): SubscriptionStore => ({ ...store, updateRecord: () => Promise.reject(new Error('store unreachable')) }),
      'recording a verified request failed; retrying until its deadline',
      'verified request not recorded: the store failed as the hub was stopping; the subscriber must ask again',
    ],
  ])('stops retrying a failed %s when the hub closes, instead of holding the close for minutes', async (_label, wrapStore, retrying, stopped) => {
    const dir2 = await tempDir('websub-store-fails-');
    const { logger: captured, lines } = capturingLogger();
    const failing = await startHub({ pki, dataDir: dir2.path, follower, logger: captured, wrapStore });
    try {
      expect((await subscribe(failing, 'store-fails')).status).toBe(202);
      await waitFor(() => lines.some((line) => line.msg === retrying), 10_000, 'a failed store operation');
      const started = performance.now();
      await failing.stop();
      expect(performance.now() - started).toBeLessThan(7_000);
      expect(lines.map((line) => line.msg)).toContain(stopped);
      expect(lines.map((line) => line.msg)).not.toContain('verification crashed');
    } finally {
      await dir2.remove();
    }
  });

  // The review of the retried write: a write NATS carried out but answered too late was retried with
  // the change that made it, which reset what deliveries had recorded since.
  it('a verified write that landed although it failed is not applied again over what deliveries recorded since', async () => {
    const name = 'landed-late';
    const key = subscriptionKey(TOPIC_URLS.reviews, subscriber.url(name));
    let calls = 0;
    let retried = (): void => undefined;
    const retryDone = new Promise<void>((resolve) => (retried = resolve));
    const landedLate = (store: SubscriptionStore): SubscriptionStore => ({
      ...store,
      updateRecord: async (k, change) => {
        if (k !== key) return store.updateRecord(k, change);
        calls++;
        const written = await store.updateRecord(k, change);
        if (calls > 1) {
          retried();
          return written;
        }
        // A delivery's failure lands after the write, then the write's answer is lost.
        await store.update(k, (cur) => (cur ? { ...cur, failures: 2 } : undefined));
        throw new Error('NATS answered too late');
      },
    });
    await withOwnHub({ wrapStore: landedLate }, async (running) => {
      expect((await subscribe(running, name)).status).toBe(202);
      await retryDone;
      expect((await running.store.get(key))?.failures).toBe(2);
    });
  });
});

describe('the callback host budget', () => {
  it('is the host alone: another port or spelling of it shares its budget', async () => {
    const otherPort = await Subscriber.start(pki);
    try {
      await withOwnHub({ limits: { perCallbackHost: { burst: 1, perMinute: 1 } } }, async (running) => {
        const statuses = [];
        for (const callback of [subscriber.url('host-key', '', '127.0.0.1'), otherPort.url('host-key', '', '127.0.0.1'), subscriber.url('host-key'), otherPort.url('host-key', '', 'LOCALHOST.')]) {
          statuses.push((await running.post({ 'hub.mode': 'subscribe', 'hub.topic': TOPIC_URLS.reviews, 'hub.callback': callback })).status);
        }
        expect(statuses).toEqual([202, 429, 202, 429]);
        expect(otherPort.requests('host-key')).toEqual([]);
      });
    } finally {
      await otherPort.close();
    }
  });

  it('is per client: one address spending its budget for a host shuts no other out, and all together are held to the host-wide budget', async () => {
    const limits = { perCallbackHost: { burst: 1, perMinute: 1 }, perCallbackHostTotal: { burst: 3, perMinute: 1 } };
    await withOwnHub({ env: { WEBSUB_TRUSTED_PROXY_HOPS: '1' }, limits }, async (running) => {
      const statuses = [];
      for (const [client, name] of [['203.0.113.1', 'budget-a1'], ['203.0.113.1', 'budget-a2'], ['203.0.113.2', 'budget-b'], ['203.0.113.3', 'budget-c'], ['203.0.113.4', 'budget-d']] as const) {
        const form = { 'hub.mode': 'unsubscribe', 'hub.topic': TOPIC_URLS.reviews, 'hub.callback': subscriber.url(name) };
        statuses.push((await running.post(form, undefined, { 'x-forwarded-for': client })).status);
      }
      expect(statuses).toEqual([202, 429, 202, 202, 429]);
      expect(subscriber.requests('budget-a2')).toEqual([]);
      expect(subscriber.requests('budget-d')).toEqual([]);
    });
  });
});

describe('the client address rate limits key on', () => {
  const form = (name: string) => ({ 'hub.mode': 'subscribe', 'hub.topic': TOPIC_URLS.reviews, 'hub.callback': subscriber.url(name) });
  const fromClient = (running: RunningHub, forwardedFor?: string) =>
    running.post(form('xff'), undefined, forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor }).then((r) => r.status);
  /** The statuses of one request per X-Forwarded-For value, sent one after the other. */
  async function fromClients(running: RunningHub, forwardedFor: readonly string[]): Promise<number[]> {
    const statuses = [];
    for (const entry of forwardedFor) statuses.push(await fromClient(running, entry));
    return statuses;
  }
  const numbered = (count: number, entry: (n: number) => string) => Array.from({ length: count }, (_, i) => entry(i + 1));

  const withHub = (env: Record<string, string>, run: (running: RunningHub) => Promise<void>) => withOwnHub({ env, limits: { perClient: { burst: 3, perMinute: 1 } } }, run);

  it('is the connecting address by default: X-Forwarded-For cannot pick a fresh identity per request', async () => {
    await withHub({}, async (running) => {
      expect(await fromClients(running, numbered(5, (n) => `203.0.113.${n}`))).toEqual([202, 202, 202, 429, 429]);
    });
  });

  it('with WEBSUB_TRUSTED_PROXY_HOPS=1, the entry the proxy appended: clients behind one proxy are limited apart', async () => {
    await withHub({ WEBSUB_TRUSTED_PROXY_HOPS: '1' }, async (running) => {
      expect(await fromClients(running, numbered(4, () => '198.51.100.1'))).toEqual([202, 202, 202, 429]);
      // What the client wrote itself is left of the proxy's entry and changes nothing.
      expect(await fromClient(running, '203.0.113.9, 198.51.100.1')).toBe(429);
      expect(await fromClient(running, '198.51.100.2')).toBe(202);
      // A request without the header did not come through the proxy: its connecting address counts.
      expect(await fromClient(running)).toBe(202);
    });
  });

  it('an IPv6 client by its /64, which one subscriber holds whole: rotating addresses in it does not escape the limit', async () => {
    await withHub({ WEBSUB_TRUSTED_PROXY_HOPS: '1' }, async (running) => {
      const oneSubnet = ['2001:db8:1:2::1', '2001:db8:1:2:a:b:c:d', '[2001:0db8:1:2::7]', '2001:db8:1:2:ffff:ffff:ffff:ffff'];
      expect(await fromClients(running, oneSubnet)).toEqual([202, 202, 202, 429]);
      // The neighbouring /64 is another subscriber.
      expect(await fromClient(running, '2001:db8:1:3::1')).toBe(202);
    });
  });

  it('an IPv4 client by its address, also when written as IPv4-mapped IPv6', async () => {
    await withHub({ WEBSUB_TRUSTED_PROXY_HOPS: '1' }, async (running) => {
      expect(await fromClients(running, ['198.51.100.1', '::ffff:198.51.100.1', '::ffff:c633:6401', '198.51.100.1'])).toEqual([202, 202, 202, 429]);
      expect(await fromClient(running, '198.51.100.2')).toBe(202);
    });
  });

  it('with WEBSUB_TRUSTED_PROXY_HOPS=2, the second entry from the right; a shorter header falls back to the connecting address', async () => {
    await withHub({ WEBSUB_TRUSTED_PROXY_HOPS: '2' }, async (running) => {
      expect(await fromClients(running, numbered(4, (n) => `203.0.113.${n}, 198.51.100.7, 10.0.0.${n}`))).toEqual([202, 202, 202, 429]);
      expect(await fromClients(running, numbered(4, (n) => `198.51.100.${10 + n}`))).toEqual([202, 202, 202, 429]);
    });
  });
});

describe('requests the client abandons', () => {
  it.each([
    ['the client disconnects in the middle of the body', undefined],
    ['the server’s request timeout cuts the body off', 200],
  ])('%s: no error logged, no stack, and nothing written after', async (_label, requestTimeoutMs) => {
    const { logger, lines } = capturingLogger();
    const dir2 = await tempDir('websub-abort-');
    const running = await startHub({ pki, dataDir: dir2.path, follower, logger, ...(requestTimeoutMs === undefined ? {} : { requestTimeoutMs }) });
    try {
      const socket = connect(Number(new URL(running.url).port), '127.0.0.1');
      await once(socket, 'connect');
      const received: Buffer[] = [];
      socket.on('data', (chunk: Buffer) => received.push(chunk));
      const closed = once(socket, 'close');
      const head = 'POST /api/websub/hub HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\n';
      socket.write(`${head}hub.mode=subscribe&hub.topic=`, () => {
        if (requestTimeoutMs === undefined) socket.destroy();
      });
      await closed;
      await waitFor(() => lines.some((l) => l.msg.startsWith('hub request')), 5000, 'the hub to log the request');
      expect(lines.filter((l) => l.level >= 40 || l.err !== undefined)).toEqual([]);
      // Only node:http's own 408, if anything: the hub wrote nothing to the closed connection.
      const answer = Buffer.concat(received).toString('latin1');
      expect(answer.match(/HTTP\/1\.1 /g) ?? []).toEqual(requestTimeoutMs === undefined ? [] : ['HTTP/1.1 ']);
      if (requestTimeoutMs !== undefined) expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    } finally {
      await running.stop();
      await dir2.remove();
    }
  });
});

describe('delivery failure logs', () => {
  it('each failed notification and the denial are warnings naming the callback host, never its path or query', async () => {
    const { logger, lines, raw } = capturingLogger();
    const dir2 = await tempDir('websub-failure-logs-');
    const follower2 = new TestFollower();
    follower2.publish(snapshotFor(++seed));
    const running = await startHub({ pki, dataDir: dir2.path, follower: follower2, logger });
    try {
      // The subscriber's own token, in its path and in its query.
      const callback = subscriber.url('logged-tok-7f3a', '?token=tok-9c1e');
      subscriber.behave('logged-tok-7f3a', (req) => (req.method === 'POST' ? { status: 500 } : req.query.has('hub.challenge') ? 'echo' : { status: 200 }));
      expect((await running.post({ 'hub.mode': 'subscribe', 'hub.topic': TOPIC_URLS.reviews, 'hub.callback': callback })).status).toBe(202);
      await waitFor(async () => (await running.store.get(subscriptionKey(TOPIC_URLS.reviews, callback))) !== null, 5000, 'verified');
      follower2.publish(snapshotFor(++seed));
      await waitFor(() => lines.some((l) => l.msg.startsWith('third consecutive failure')), 5000, 'the denial logged');

      const host = `localhost:${subscriber.port}`;
      expect(lines.filter((l) => l.level >= 40).map(({ level, msg, callbackHost, failures }) => ({ level, msg, callbackHost, failures }))).toEqual([
        { level: 40, msg: 'notification failed; will retry', callbackHost: host, failures: 1 },
        { level: 40, msg: 'notification failed; will retry', callbackHost: host, failures: 2 },
        { level: 40, msg: 'third consecutive failure; denial sent and subscription removed', callbackHost: host, failures: 3 },
      ]);
      for (const line of raw) expect(line).not.toMatch(/logged-tok-7f3a|tok-9c1e/);
    } finally {
      await running.stop();
      await dir2.remove();
    }
  });
});

describe('a third failure racing another writer', () => {
  it.each([
    ['removed it (another replica removed it first)', (): null => null],
    ['reset its failures (a concurrent delivery succeeded)', (cur: Subscription | null) => (cur ? { ...cur, failures: 0 } : undefined)],
  ])('when the store meanwhile %s: no denial, none counted, and the log says nothing was removed', async (_label, otherWrite) => {
    const { logger, lines } = capturingLogger();
    const dir2 = await tempDir('websub-failure-race-');
    const follower2 = new TestFollower();
    follower2.publish(snapshotFor(++seed));
    const name = `raced-${seed}`;
    const callback = subscriber.url(name);
    const key = subscriptionKey(TOPIC_URLS.reviews, callback);
    const running = await startHub({
      pki,
      dataDir: dir2.path,
      follower: follower2,
      logger,
      // The other writer lands right after the hub recorded the third failure, before it removes the subscription.
      wrapStore: (store) => ({
        ...store,
        update: async (k, change) => {
          const after = await store.update(k, change);
          if (k === key && after?.failures === 3) await store.update(k, otherWrite);
          return after;
        },
      }),
    });
    try {
      subscriber.behave(name, (req) => (req.method === 'POST' ? { status: 500 } : req.query.has('hub.challenge') ? 'echo' : { status: 200 }));
      expect((await running.post({ 'hub.mode': 'subscribe', 'hub.topic': TOPIC_URLS.reviews, 'hub.callback': callback })).status).toBe(202);
      await waitFor(async () => (await running.store.get(key)) !== null, 5000, 'verified');
      follower2.publish(snapshotFor(++seed));
      await waitFor(() => lines.some((l) => l.msg.startsWith('third consecutive failure')), 5000, 'the third failure logged');

      expect(lines.filter((l) => l.msg.startsWith('third consecutive failure')).map(({ level, msg, failures }) => ({ level, msg, failures }))).toEqual([
        { level: 30, msg: 'third consecutive failure; subscription already removed or changed meanwhile, no denial sent', failures: 3 },
      ]);
      // The denial would have been sent before that line.
      expect(subscriber.requests(name).filter((r) => r.query.get('hub.mode') === 'denied')).toEqual([]);
      expect(await metricValue(running.metrics, 'websub_denials_total', { reason: 'delivery-failed-3-times' })).toBe(0);
    } finally {
      await running.stop();
      await dir2.remove();
    }
  });
});

describe('durable state (file store)', () => {
  it('survives a restart, and a change made while the hub was down is delivered when it returns', async () => {
    const dir2 = await tempDir('websub-restart-');
    const follower2 = new TestFollower();
    follower2.publish(snapshotFor(++seed));
    const first = await startHub({ pki, dataDir: dir2.path, follower: follower2 });
    const callback = subscriber.url('restart');
    await first.post({ 'hub.mode': 'subscribe', 'hub.topic': TOPIC_URLS.feedJson, 'hub.callback': callback, 'hub.secret': 's3cret' });
    await waitFor(async () => (await first.store.get(subscriptionKey(TOPIC_URLS.feedJson, callback))) !== null, 5000, 'verified before restart');
    await first.stop();

    const changed = snapshotFor(++seed);
    const follower3 = new TestFollower();
    follower3.publish(changed);
    const second = await startHub({ pki, dataDir: dir2.path, follower: follower3 });
    try {
      await waitFor(() => subscriber.notifications('restart').length === 1, 5000, 'delivered after restart');
      const [note] = subscriber.notifications('restart');
      expect(note?.body.equals(changed.topic('feedJson').identity.body)).toBe(true);
      expect(note?.headers['x-hub-signature']).toBe(`sha256=${createHmac('sha256', 's3cret').update(note?.body ?? '').digest('hex')}`);
      // The same dataset again (a restart without a change) sends nothing more.
      await second.stop();
      const third = await startHub({ pki, dataDir: dir2.path, follower: follower3 });
      await third.stop();
      expect(subscriber.notifications('restart')).toHaveLength(1);
    } finally {
      await second.stop().catch(() => undefined);
      await dir2.remove();
    }
  });
});

describe('restarts with the in-process queue (standalone)', () => {
  const queueDepth = (running: RunningHub) => metricValue(running.metrics, 'websub_queue_depth');

  /** Subscribe `name` to the reviews topic through `running` and wait until its verified state is stored. */
  async function subscribeThrough(running: RunningHub, name: string): Promise<void> {
    const callback = subscriber.url(name);
    const key = subscriptionKey(TOPIC_URLS.reviews, callback);
    const before = (await running.store.get(key))?.requestedAt;
    expect((await running.post({ 'hub.mode': 'subscribe', 'hub.topic': TOPIC_URLS.reviews, 'hub.callback': callback })).status).toBe(202);
    await waitFor(async () => (await running.store.get(key))?.requestedAt !== before, 5000, `${name} verified`);
  }

  it('jobs dropped at close are delivered by the next hub, to exactly the subscribers still owed the change', async () => {
    const dir2 = await tempDir('websub-resume-');
    const follower2 = new TestFollower();
    follower2.publish(snapshotFor(++seed));
    // One delivery at a time, and a retry due once the first hub is gone (it stands across the restart).
    const options = { pki, dataDir: dir2.path, follower: follower2, limits: { deliveryConcurrency: 1 }, env: { WEBSUB_RETRY_DELAYS_MS: '0,3000' } };
    const first = await startHub(options);
    let firstStopped: Promise<void> | null = null;
    let second: RunningHub | null = null;
    let answerSlow = (): void => undefined;
    const slowAnswered = new Promise<void>((resolve) => (answerSlow = resolve));
    try {
      // Listed, hence queued, in this order: a failure waiting for its retry, one in flight at close, two waiting.
      for (const name of ['resume-retrying', 'resume-slow', 'resume-a', 'resume-b']) await subscribeThrough(first, name);
      let retryingPosts = 0;
      subscriber.behave('resume-retrying', (req) => (req.method === 'POST' ? (++retryingPosts === 1 ? { status: 500 } : { status: 204 }) : 'echo'));
      subscriber.behave('resume-slow', (req) => (req.method === 'POST' ? { status: 204, answerWhen: slowAnswered } : 'echo'));
      const changed = snapshotFor(++seed);
      follower2.publish(changed);
      const body = changed.topic('reviews').identity.body;
      await waitFor(() => subscriber.countReceived('resume-slow', body) === 1, 5000, 'the slow delivery under way');
      // A renewal keeps the subscription owed the change it has not acknowledged.
      await subscribeThrough(first, 'resume-b');

      firstStopped = first.stop();
      await waitFor(async () => (await queueDepth(first)) === 1, 5000, 'waiting jobs dropped, the slow one still running');
      answerSlow();
      await firstStopped;
      expect(subscriber.countReceived('resume-a', body) + subscriber.countReceived('resume-b', body)).toBe(0);

      second = await startHub(options);
      const running = second;
      await waitFor(() => ['resume-retrying', 'resume-a', 'resume-b'].every((name) => subscriber.countReceived(name, body) >= 1), 5000, 'owed deliveries resumed');
      await waitFor(async () => (await queueDepth(running)) === 0, 10_000, 'resumed jobs done, the retry once due');
      expect(['resume-retrying', 'resume-slow', 'resume-a', 'resume-b'].map((name) => [name, subscriber.countReceived(name, body)])).toEqual([
        ['resume-retrying', 2],
        ['resume-slow', 1],
        ['resume-a', 1],
        ['resume-b', 1],
      ]);
      expect(await second.store.get(subscriptionKey(TOPIC_URLS.reviews, subscriber.url('resume-retrying')))).toMatchObject({ failures: 0, lastStatus: 204 });
    } finally {
      answerSlow();
      await (firstStopped ?? first.stop());
      await second?.stop();
      await dir2.remove();
    }
  });

  it('a subscription made after the last change is not notified of it at the next start', async () => {
    const dir2 = await tempDir('websub-resume-new-');
    const follower2 = new TestFollower();
    follower2.publish(snapshotFor(++seed));
    const first = await startHub({ pki, dataDir: dir2.path, follower: follower2 });
    await subscribeThrough(first, 'resume-newcomer');
    await first.stop();
    const second = await startHub({ pki, dataDir: dir2.path, follower: follower2 });
    try {
      await waitFor(async () => (await queueDepth(second)) === 0, 5000, 'nothing left to deliver');
      expect(subscriber.notifications('resume-newcomer')).toEqual([]);
    } finally {
      await second.stop();
      await dir2.remove();
    }
  });
});

describe('metrics', () => {
  it('exposes the websub_* series without callback URLs as labels', async () => {
    const text = await hub.metrics.registry.metrics();
    for (const name of [
      'websub_subscriptions',
      'websub_verifications_total',
      'websub_deliveries_total',
      'websub_delivery_duration_seconds',
      'websub_delivery_retries_total',
      'websub_denials_total',
      'websub_queue_depth',
      'websub_requests_total',
    ]) {
      expect(text).toContain(`# TYPE ${name}`);
    }
    expect(text).toMatch(/websub_subscriptions\{state="active"\} [1-9]/);
    expect(text).not.toContain('localhost');
  });

  it('lists the store once for scrapes that arrive together', async () => {
    const dir = await tempDir('hub-scrapes-');
    const quiet = new TestFollower();
    quiet.publish(snapshotFor(++seed));
    let held: Promise<void> | null = null;
    let listings = 0;
    const counted = await startHub({
      pki,
      dataDir: dir.path,
      follower: quiet,
      limits: { sweepIntervalMs: 3_600_000 },
      wrapStore: (store) => ({
        ...store,
        list: async () => {
          if (held) {
            listings++;
            await held;
          }
          return store.list();
        },
      }),
    });
    try {
      let release = () => {};
      held = new Promise<void>((resolve) => (release = resolve));
      const scrapes = Promise.all([counted.metrics.registry.metrics(), counted.metrics.registry.metrics()]);
      await waitFor(() => listings > 0, 5_000, 'a scrape listing the store');
      release();
      const [first, second] = await scrapes;
      expect(listings).toBe(1);
      for (const text of [first, second]) expect(text).toContain('websub_subscriptions{state="active"} 0');
    } finally {
      held = null;
      await counted.stop();
      await dir.remove();
    }
  });
});

describe('the sweep of expired subscriptions', () => {
  it('keeps a subscription renewed between its listing and its removal: the renewal was verified, the subscriber expects notifications', async () => {
    const dir = await tempDir('websub-sweep-');
    const store = await openFileSubscriptionStore(dir.path);
    try {
      const expired = sampleSubscription('https://renewing.example/cb', { expiresAt: 2_000 });
      await store.update(expired.key, () => expired);
      // The renewal lands right after the sweep listed the records, as another replica's verification would.
      const renewedMeanwhile: SubscriptionStore = Object.assign(Object.create(store) as SubscriptionStore, {
        listRecords: async () => {
          const records = await store.listRecords();
          await store.update(expired.key, (cur) => (cur ? { ...cur, expiresAt: 9_000_000 } : null));
          return records;
        },
      });
      expect(await sweepExpired({ store: renewedMeanwhile, logger: silentLogger, now: () => 5_000 })).toBe(0);
      expect(await store.get(expired.key)).toMatchObject({ expiresAt: 9_000_000 });
    } finally {
      await store.close();
      await dir.remove();
    }
  });
});
