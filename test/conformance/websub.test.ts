import { createHmac } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { Ajv } from 'ajv';
import { createTestPki, Subscriber, type Received } from '../../services/websub-hub/test/support.js';
import { eventually } from '../support/eventually.js';
import { send, startStandalone, type Standalone } from './harness.js';

/**
 * W3C WebSub (2018) hub behaviour (§5.1 subscriber requests, §5.3 verification, §7 distribution) and
 * interface spec §3, §4.7, §6, §7 against the running standalone, with a real HTTPS subscriber whose
 * certificate comes from a throw-away CA the hub process trusts through NODE_EXTRA_CA_CERTS.
 */
let server: Standalone;
let subscriber: Subscriber;
let caDir: string;
let hubUrl: string;
let topics: { atom: string; jsonFeed: string; reviews: string };
let publishes = 0;

beforeAll(async () => {
  const pki = await createTestPki();
  caDir = await mkdtemp(join(tmpdir(), 'conformance-ca-'));
  const caFile = join(caDir, 'ca.pem');
  await writeFile(caFile, pki.caPem);
  subscriber = await Subscriber.start(pki);
  server = await startStandalone({ NODE_EXTRA_CA_CERTS: caFile, WEBSUB_ALLOW_PRIVATE_CALLBACKS: 'true', WEBSUB_RETRY_DELAYS_MS: '0,50,50', WEBSUB_LEASE_MIN_SECONDS: '1' });
  hubUrl = `${server.baseUrl}/api/websub/hub`;
  topics = { atom: `${server.baseUrl}/feed.xml`, jsonFeed: `${server.baseUrl}/api/feed.json`, reviews: `${server.baseUrl}/reviews.json` };
}, 60_000);
afterAll(async () => {
  await server?.stop();
  await subscriber?.close();
  if (caDir) await rm(caDir, { recursive: true, force: true });
});

const hub = (form: Record<string, string>, contentType = 'application/x-www-form-urlencoded') => send('POST', hubUrl, { 'Content-Type': contentType }, new URLSearchParams(form).toString());

/** The request `find` returns, once it has arrived. */
async function arrival(find: () => Received | undefined): Promise<Received> {
  let found: Received | undefined;
  await eventually(() => (found = find()) !== undefined);
  return found as Received;
}

/** Subscribe `name` to `topic` and wait until the hub has sent its verification GET. */
async function subscribe(name: string, topic: string, extra: Record<string, string> = {}): Promise<Received> {
  const before = subscriber.verifications(name).length;
  const res = await hub({ 'hub.mode': 'subscribe', 'hub.topic': topic, 'hub.callback': subscriber.url(name), ...extra });
  expect(res.status).toBe(202);
  return arrival(() => subscriber.verifications(name)[before]);
}

/** A new dataset version (one author renamed): every topic changes. Resolves once it is served. */
async function publishChange(): Promise<void> {
  const before = (await send('HEAD', topics.reviews)).headers['etag'];
  const dataset = JSON.parse(await readFile(server.datasetFile, 'utf8')) as { reviews: Array<{ author: string }> };
  const first = dataset.reviews[0];
  if (!first) throw new Error('the sample dataset has no reviews');
  first.author = `Conformance Reviewer ${++publishes}`;
  await writeFile(server.datasetFile, JSON.stringify(dataset));
  await eventually(async () => (await send('HEAD', topics.reviews)).headers['etag'] !== before, { timeoutMs: 15_000 });
}

describe('subscription requests (WebSub §5.1, spec §4.7)', () => {
  it('an HTTPS callback is accepted with 202 and verified by a GET carrying hub.mode, hub.topic, hub.challenge and hub.lease_seconds', async () => {
    const verification = await subscribe('verify-params', topics.atom, { 'hub.lease_seconds': '7200' });
    expect(verification.method).toBe('GET');
    expect(verification.query.get('hub.mode')).toBe('subscribe');
    expect(verification.query.get('hub.topic')).toBe(topics.atom);
    expect(verification.query.get('hub.challenge')).toMatch(/^\S{16,}$/);
    expect(Number(verification.query.get('hub.lease_seconds'))).toBe(7200);
  });

  it('each verification uses a fresh challenge', async () => {
    const first = await subscribe('fresh-challenge', topics.jsonFeed);
    const second = await subscribe('fresh-challenge', topics.jsonFeed);
    expect(first.query.get('hub.challenge')).not.toBe(second.query.get('hub.challenge'));
  });

  it.each([
    ['a plain-HTTP callback', { 'hub.callback': 'http://localhost:1/cb' }],
    ['an unknown topic', { 'hub.topic': 'https://elsewhere.example/feed.xml' }],
    ['an unknown mode', { 'hub.mode': 'publish' }],
    ['a missing callback', { 'hub.callback': '' }],
    ['a relative callback', { 'hub.callback': '/cb' }],
  ])('%s is refused with 4xx and a plain-text reason, and never reaches the callback', async (_what, change) => {
    const before = subscriber.totalRequests();
    const form: Record<string, string> = { 'hub.mode': 'subscribe', 'hub.topic': topics.atom, 'hub.callback': subscriber.url('refused'), ...change };
    const res = await hub(Object.fromEntries(Object.entries(form).filter(([, value]) => value !== '')));
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(res.text().length).toBeGreaterThan(0);
    expect(subscriber.totalRequests()).toBe(before);
  });

  it('a form body with a charset parameter is accepted; a JSON body is not (415)', async () => {
    const withCharset = await hub({ 'hub.mode': 'subscribe', 'hub.topic': topics.reviews, 'hub.callback': subscriber.url('charset') }, 'application/x-www-form-urlencoded; charset=UTF-8');
    expect(withCharset.status).toBe(202);
    const json = await send('POST', hubUrl, { 'Content-Type': 'application/json' }, JSON.stringify({ 'hub.mode': 'subscribe' }));
    expect(json.status).toBe(415);
  });

  // Closed with the rest unread, a connection is reset under a client still sending, which saw EPIPE instead
  // of the answer (RFC 9112 §9.6). Only across processes: in one, the client's writes finish first.
  it('a 20 MB form from a client still sending it gets the 413 and its reason, not a reset', async () => {
    const body = `hub.mode=subscribe&x=${'a'.repeat(20 * 1024 * 1024)}`;
    const response = await fetch(hubUrl, { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body });
    expect([response.status, await response.text()]).toEqual([413, 'The body must be at most 16384 bytes.\n']);
  });

  it('GET on the hub is 405 with Allow: POST, OPTIONS', async () => {
    const res = await send('GET', hubUrl);
    expect(res.status).toBe(405);
    expect(res.headers['allow']).toBe('POST, OPTIONS');
  });
});

describe('verification, distribution and removal (WebSub §5.3, §7; spec §3, §6)', () => {
  const secret = 'conformance-secret';

  beforeAll(async () => {
    subscriber.behave('wrong-echo', (req) => (req.method === 'GET' ? { status: 200, body: 'not-the-challenge' } : { status: 204 }));
    subscriber.behave('refuses', (req) => (req.method === 'GET' ? { status: 404, body: '' } : { status: 204 }));
    // Answers every notification with 500: three consecutive failures end the subscription.
    subscriber.behave('failing', (req) => (req.method === 'GET' ? 'echo' : { status: 500 }));
    // Refuses to confirm its unsubscribe: the subscription must stay active.
    subscriber.behave('stays', (req) => (req.method === 'GET' ? (req.query.get('hub.mode') === 'unsubscribe' ? { status: 404 } : 'echo') : { status: 204 }));
    // 410 Gone on a notification: removed at once, no retries.
    subscriber.behave('gone', (req) => (req.method === 'GET' ? 'echo' : { status: 410 }));
    await Promise.all([
      subscribe('atom', topics.atom, { 'hub.secret': secret }),
      subscribe('jsonfeed', topics.jsonFeed),
      subscribe('dataset', topics.reviews),
      subscribe('wrong-echo', topics.atom),
      subscribe('refuses', topics.atom),
      subscribe('failing', topics.atom),
      subscribe('leaving', topics.atom),
      subscribe('short-lease', topics.atom, { 'hub.lease_seconds': '1' }),
      subscribe('stays', topics.atom),
      subscribe('gone', topics.atom),
    ]);
    const staysBefore = subscriber.verifications('stays').length;
    expect((await hub({ 'hub.mode': 'unsubscribe', 'hub.topic': topics.atom, 'hub.callback': subscriber.url('stays') })).status).toBe(202);
    await arrival(() => subscriber.verifications('stays')[staysBefore]);
    // Unsubscribe `leaving` (verified like a subscribe) before the change.
    const before = subscriber.verifications('leaving').length;
    expect((await hub({ 'hub.mode': 'unsubscribe', 'hub.topic': topics.atom, 'hub.callback': subscriber.url('leaving') })).status).toBe(202);
    const unsubscribe = await arrival(() => subscriber.verifications('leaving')[before]);
    expect(unsubscribe.query.get('hub.mode')).toBe('unsubscribe');
    expect(unsubscribe.query.get('hub.topic')).toBe(topics.atom);
    // The hub records each verification outcome as the echo arrives; a publish takes the file
    // watcher's debounce plus a snapshot build (far longer), so it lands after every outcome.
    await publishChange();
    await eventually(
      () => ['atom', 'jsonfeed', 'dataset', 'stays', 'gone'].every((name) => subscriber.notifications(name).length > 0),
      { timeoutMs: 15_000 },
    );
    await eventually(() => subscriber.requests('failing').some((r) => r.query.get('hub.mode') === 'denied'), { timeoutMs: 15_000 });
  }, 60_000);

  it.each([
    ['atom', () => topics.atom, 'application/atom+xml'],
    ['jsonfeed', () => topics.jsonFeed, 'application/json'],
    ['dataset', () => topics.reviews, 'application/json'],
  ])('%s: a POST with the full current topic bytes, its exact Content-Type and Link rel="hub" + rel="self"', async (name, topicOf, contentType) => {
    const topic = topicOf();
    const notification = subscriber.notifications(name).at(-1) as Received;
    const current = await send('GET', topic);
    expect(notification.headers['content-type']).toBe(contentType);
    expect(notification.body.equals(current.body)).toBe(true);
    expect(notification.headers['link']).toBe(`<${hubUrl}>; rel="hub", <${topic}>; rel="self"`);
    expect(notification.headers['link']).toBe(current.headers['link']);
  });

  it('signs the notification with X-Hub-Signature: sha256=HMAC(secret, body) when subscribed with hub.secret, and only then', () => {
    const signed = subscriber.notifications('atom').at(-1) as Received;
    expect(signed.headers['x-hub-signature']).toBe(`sha256=${createHmac('sha256', secret).update(signed.body).digest('hex')}`);
    expect(subscriber.notifications('jsonfeed').at(-1)?.headers['x-hub-signature']).toBeUndefined();
  });

  it('a challenge answered with the wrong body or a non-2xx status activates nothing', () => {
    expect(subscriber.notifications('wrong-echo')).toEqual([]);
    expect(subscriber.notifications('refuses')).toEqual([]);
  });

  it('a verified unsubscribe stops notifications; an unsubscribe the callback does not confirm changes nothing', () => {
    expect(subscriber.notifications('leaving')).toEqual([]);
    expect(subscriber.notifications('stays').length).toBeGreaterThan(0);
  });

  // An audit: unsubscribe verifications carried hub.lease_seconds=0 where the OpenAPI callback declared a minimum of 1,
  // so a subscriber validating its callback from the document refused them and its unsubscribe never took effect.
  it('every verification sent, subscribe and unsubscribe, carries hub.lease_seconds (spec §4.7) and only parameters the OpenAPI callback declares, each valid', async () => {
    const openapi = (await send('GET', `${server.baseUrl}/.well-known/openapi.json`)).json() as {
      paths: Record<string, { post?: { callbacks?: { verification?: Record<string, { get: { parameters: Array<{ name: string; required?: boolean; schema: Record<string, unknown> }> } }> } } }>;
    };
    const [operation] = Object.values(openapi.paths['/api/websub/hub']?.post?.callbacks?.verification ?? {});
    const declared = new Map((operation?.get.parameters ?? []).map((parameter) => [parameter.name, parameter]));
    const ajv = new Ajv({ strict: false, coerceTypes: true });
    // An unsubscribe of a callback never subscribed is verified too, with nothing left of a lease.
    expect((await hub({ 'hub.mode': 'unsubscribe', 'hub.topic': topics.atom, 'hub.callback': subscriber.url('stranger') })).status).toBe(202);
    await arrival(() => subscriber.verifications('stranger')[0]);
    const sent = [...subscriber.verifications('leaving'), ...subscriber.verifications('stays'), ...subscriber.verifications('stranger')];
    expect(sent.map((request) => request.query.get('hub.mode')).sort()).toEqual(['subscribe', 'subscribe', 'unsubscribe', 'unsubscribe', 'unsubscribe']);
    for (const request of sent) {
      expect(request.query.get('hub.lease_seconds')).toMatch(/^\d+$/);
      for (const [name, value] of request.query) {
        if (!name.startsWith('hub.')) continue;
        const parameter = declared.get(name);
        expect({ name, declared: parameter !== undefined }).toEqual({ name, declared: true });
        const holder = { value };
        expect({ name, value, valid: ajv.validate({ type: 'object', properties: { value: parameter!.schema } }, holder) }).toEqual({ name, value, valid: true });
      }
      for (const [name, parameter] of declared) if (parameter.required) expect({ name, sent: request.query.has(name) }).toEqual({ name, sent: true });
    }
  });

  it('a lease that ran out ends the subscription: no notification after it (spec §3)', async () => {
    const verification = subscriber.verifications('short-lease')[0] as Received;
    expect(verification.query.get('hub.lease_seconds')).toBe('1');
    const leaseEnd = Date.now() + 1_100;
    // Waiting out the one-second lease is the behaviour under test.
    await eventually(() => Date.now() > leaseEnd, { timeoutMs: 2_000 });
    const seen = subscriber.notifications('short-lease').length;
    const atomBefore = subscriber.notifications('atom').length;
    await publishChange();
    await eventually(() => subscriber.notifications('atom').length > atomBefore, { timeoutMs: 15_000 });
    expect(subscriber.notifications('short-lease')).toHaveLength(seen);
  }, 30_000);

  it('three consecutive delivery failures remove the subscription, with a hub.mode=denied notice', async () => {
    expect(subscriber.notifications('failing')).toHaveLength(3);
    const denial = subscriber.requests('failing').find((r) => r.query.get('hub.mode') === 'denied') as Received;
    expect(denial.method).toBe('GET');
    expect(denial.query.get('hub.topic')).toBe(topics.atom);
    // The next change reaches the live subscriber but not the removed one.
    const atomBefore = subscriber.notifications('atom').length;
    await publishChange();
    await eventually(() => subscriber.notifications('atom').length > atomBefore, { timeoutMs: 15_000 });
    expect(subscriber.notifications('failing')).toHaveLength(3);
    // 410 Gone ended its subscription after the first notification, without retries.
    expect(subscriber.notifications('gone')).toHaveLength(1);
  }, 30_000);
});
