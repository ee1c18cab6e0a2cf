import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { connect } from '@nats-io/transport-node';
import { NatsDatasetStore, type PublishOutcome } from '@reviews/dataset-store';
import { loadNote } from '../lib/machine.ts';
import { fmt, type Section } from '../lib/report.ts';
import { BASE_URL, startService, workDir } from '../lib/context.ts';
import { datasetInput, editedVersions } from '../lib/datasets.ts';
import { startBenchNats } from '../lib/nats.ts';
import { createBenchPki } from '../lib/pki.ts';
import { scrapeValue } from '../lib/prometheus.ts';
import { freePort, repoRoot, rssBytes, startProcess, type Running } from '../lib/processes.ts';

const REVIEWS = 2_000;
const PER_TOPIC = 1_000;
const TOPICS = [
  { path: '/reviews.json', slug: 'reviews' },
  { path: '/api/feed.json', slug: 'feed-json' },
  { path: '/feed.xml', slug: 'feed-atom' },
] as const;
// 200 callback origins (host:port) on 50 loopback addresses: the hub limits subscription requests per
// callback host name, whatever the port (burst 100 for all clients together), so 60 subscriptions each.
const SUBSCRIBER_PROCESSES = 4;
const PORTS_PER_PROCESS = 50;
const CALLBACK_HOSTS = Array.from({ length: 50 }, (_, i) => `127.0.0.${i + 2}`);
// The hub's per-client limit (burst 30) is keyed on the proxy-appended X-Forwarded-For address.
const SUBSCRIPTIONS_PER_CLIENT_ADDRESS = 25;
// Below the hub's cap of 500 pending verifications.
const SUBSCRIBE_WAVE = 250;
const SUBSCRIBE_CONCURRENCY = 25;
const DELIVERY_TIMEOUT_MS = 60_000;
const RSS_SAMPLE_MS = 50;

interface SubscriberStats {
  /** host:port of each callback origin. */
  readonly origins: string[];
  readonly challenges: number;
  readonly notifications: number;
  readonly bytes: number;
  readonly firstAt: number;
  readonly lastAt: number;
  readonly callbacks: number;
}

interface SubscriberProcess {
  readonly running: Running;
  readonly origins: string[];
  stats(reset?: boolean): Promise<SubscriberStats>;
}

async function startSubscribers(keyFile: string, certFile: string, index: number): Promise<SubscriberProcess> {
  const portFile = join(workDir, `subscribers-${index}.port`);
  rmSync(portFile, { force: true });
  const running = startProcess(
    [join(repoRoot, 'bench/servers/subscribers.ts')],
    { KEY_FILE: keyFile, CERT_FILE: certFile, PORT_COUNT: String(PORTS_PER_PROCESS), LISTEN_HOSTS: CALLBACK_HOSTS.join(','), CONTROL_PORT_FILE: portFile },
    0,
  );
  let control = 0;
  await until(async () => (control = Number(existsSync(portFile) ? readFileSync(portFile, 'utf8') : 0)) > 0, 20_000, 'subscriber control port');
  const stats = async (reset = false) => (await (await fetch(`http://127.0.0.1:${control}/${reset ? 'reset' : 'stats'}`, { method: reset ? 'POST' : 'GET' })).json()) as SubscriberStats;
  let origins: string[] = [];
  await until(async () => (origins = (await stats().catch(() => null))?.origins ?? []).length === PORTS_PER_PROCESS, 20_000, 'subscriber ports listening');
  return { running, origins, stats };
}

async function until(check: () => Promise<boolean>, timeoutMs: number, what: string, intervalMs = 50): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await delay(intervalMs);
  }
  throw new Error(`fanout: ${what} not reached within ${timeoutMs} ms`);
}

/** Subscribe `indices` to `topic` through the hub's public endpoint, in waves the hub verifies before the next. */
async function subscribe(hubUrl: string, metricsPort: number, origins: string[], topic: (typeof TOPICS)[number], indices: number[], alreadyActive: number): Promise<void> {
  for (let wave = 0; wave < indices.length; wave += SUBSCRIBE_WAVE) {
    const batch = indices.slice(wave, wave + SUBSCRIBE_WAVE);
    for (let i = 0; i < batch.length; i += SUBSCRIBE_CONCURRENCY) {
      await Promise.all(
        batch.slice(i, i + SUBSCRIBE_CONCURRENCY).map(async (j) => {
          const client = Math.floor(j / SUBSCRIPTIONS_PER_CLIENT_ADDRESS) + 1;
          const body = new URLSearchParams({
            'hub.mode': 'subscribe',
            'hub.topic': `${BASE_URL}${topic.path}`,
            'hub.callback': `https://${origins[j % origins.length]}/cb/${topic.slug}/${j}?subscriber=${j}`,
          });
          const res = await fetch(hubUrl, {
            method: 'POST',
            headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': `10.${(client >> 16) & 255}.${(client >> 8) & 255}.${client & 255}` },
            body,
          });
          const text = await res.text();
          if (res.status !== 202) throw new Error(`fanout: subscribe #${j} answered ${res.status}: ${text}`);
        }),
      );
    }
    const expected = alreadyActive + wave + batch.length;
    await until(async () => (await scrapeValue(metricsPort, 'websub_subscriptions', { state: 'active' })) >= expected, 60_000, `${expected} verified subscriptions`, 250);
  }
}

interface FanOut {
  readonly subscriptions: number;
  readonly firstMs: number;
  readonly lastMs: number;
  readonly bytes: number;
  readonly duplicates: number;
  readonly rssBefore: number;
  readonly rssPeak: number;
  readonly rssAfter: number;
}

interface Hub {
  readonly pid: number;
  readonly metricsPort: number;
}

/**
 * Publish one dataset change and wait until every subscription got its notification. Without
 * subscriptions, until the hub serves the new version (its metrics are not polled otherwise: each
 * scrape lists every subscription and would load the hub while it fans out).
 */
async function fanOut(publish: () => Promise<PublishOutcome>, subscribers: SubscriberProcess[], hub: Hub, subscriptions: number): Promise<FanOut> {
  await Promise.all(subscribers.map((s) => s.stats(true)));
  const rssBefore = await rssBytes(hub.pid);
  let rssPeak = rssBefore;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      rssPeak = Math.max(rssPeak, await rssBytes(hub.pid));
      await delay(RSS_SAMPLE_MS);
    }
  })();
  const start = Date.now();
  let all: SubscriberStats[] = [];
  try {
    const { version } = await publish();
    if (subscriptions === 0) {
      await until(async () => (await scrapeValue(hub.metricsPort, 'dataset_info', { version })) === 1, DELIVERY_TIMEOUT_MS, `hub serving ${version}`);
    }
    const delivered = async () => {
      all = await Promise.all(subscribers.map((s) => s.stats()));
      return all.reduce((n, s) => n + s.notifications, 0) >= subscriptions;
    };
    await until(delivered, DELIVERY_TIMEOUT_MS, `${subscriptions} notifications`);
  } finally {
    sampling = false;
    await sampler;
  }
  const notifications = all.reduce((n, s) => n + s.notifications, 0);
  const reached = all.reduce((n, s) => n + s.callbacks, 0);
  return {
    subscriptions,
    firstMs: subscriptions ? Math.min(...all.map((s) => s.firstAt).filter((t) => t > 0)) - start : Number.NaN,
    lastMs: subscriptions ? Math.max(...all.map((s) => s.lastAt)) - start : Number.NaN,
    bytes: all.reduce((n, s) => n + s.bytes, 0),
    duplicates: notifications - reached,
    rssBefore,
    rssPeak,
    rssAfter: await rssBytes(hub.pid),
  };
}

const mib = (bytes: number) => fmt(bytes / 2 ** 20, 1);

/** One dataset change fanned out by one websub-hub pod process to 1,000 and then 3,000 HTTPS subscribers. */
export async function fanout(): Promise<Section> {
  const load = loadNote();
  const versions = editedVersions(datasetInput(REVIEWS, 11), 4);
  const pki = createBenchPki(['127.0.0.1', ...CALLBACK_HOSTS]);
  const nats = await startBenchNats();
  const nc = await connect({ servers: nats.url, name: 'bench-fanout' });
  const subscribers: SubscriberProcess[] = [];
  let hub: Running | null = null;
  const results: FanOut[] = [];
  try {
    const store = await NatsDatasetStore.open(nc, 1);
    await store.publish(versions[0]!);
    for (let i = 0; i < SUBSCRIBER_PROCESSES; i++) subscribers.push(await startSubscribers(pki.keyFile, pki.certFile, i));
    const origins = subscribers.flatMap((s) => s.origins);
    const metricsPort = await freePort();
    hub = await startService('services/websub-hub/dist/main.js', {
      NATS_URL: nats.url,
      METRICS_PORT: String(metricsPort),
      WEBSUB_ALLOW_PRIVATE_CALLBACKS: 'true',
      // As behind an ingress that appends the client's address: subscriptions come from many clients
      // (X-Forwarded-For, SUBSCRIPTIONS_PER_CLIENT_ADDRESS each), each within the per-client rate limit.
      WEBSUB_TRUSTED_PROXY_HOPS: '1',
      NODE_EXTRA_CA_CERTS: pki.caFile,
    });
    const hubUrl = `http://127.0.0.1:${hub.port}/api/websub/hub`;
    const target: Hub = { pid: hub.child.pid ?? 0, metricsPort };
    const range = (from: number) => Array.from({ length: PER_TOPIC }, (_, i) => from + i);

    // The baseline: what a dataset change costs the hub with nobody to notify (load, render, swap).
    results.push(await fanOut(() => store.publish(versions[1]!), subscribers, target, 0));
    await subscribe(hubUrl, metricsPort, origins, TOPICS[0], range(0), 0);
    results.push(await fanOut(() => store.publish(versions[2]!), subscribers, target, PER_TOPIC));
    await subscribe(hubUrl, metricsPort, origins, TOPICS[1], range(PER_TOPIC), PER_TOPIC);
    await subscribe(hubUrl, metricsPort, origins, TOPICS[2], range(2 * PER_TOPIC), 2 * PER_TOPIC);
    results.push(await fanOut(() => store.publish(versions[3]!), subscribers, target, 3 * PER_TOPIC));
  } finally {
    await nc.close();
    await Promise.all([hub?.stop(), ...subscribers.map((s) => s.running.stop())]);
    await nats.stop();
    pki.remove();
  }

  const [none, one, three] = results as [FanOut, FanOut, FanOut];
  const rate = (r: FanOut) => (r.subscriptions ? r.subscriptions / (r.lastMs / 1000) : Number.NaN);
  const row = (label: string, r: FanOut) => [
    label,
    fmt(r.subscriptions),
    fmt(r.firstMs),
    fmt(r.lastMs),
    fmt(rate(r)),
    mib(r.bytes),
    r.duplicates,
    mib(r.rssBefore),
    mib(r.rssPeak),
    mib(r.rssAfter),
    mib(r.rssPeak - r.rssBefore),
  ];
  return {
    id: 'fanout',
    title: 'WebSub fan-out (one hub replica, HTTPS subscribers)',
    intro:
      `One websub-hub pod process (\`services/websub-hub/dist/main.js\`, NATS work queue and KV store, default limits and delivery concurrency), a private nats-server, ` +
      `and ${SUBSCRIBER_PROCESSES} HTTPS subscriber processes on ${SUBSCRIBER_PROCESSES * PORTS_PER_PROCESS} ports over ${CALLBACK_HOSTS.length} loopback addresses with a throw-away CA (trusted through \`NODE_EXTRA_CA_CERTS\`). ` +
      `Every subscription has its own callback URL (path and query) and was made through \`POST /api/websub/hub\` and verified by challenge; the hub trusts one proxy hop (\`WEBSUB_TRUSTED_PROXY_HOPS=1\`), so each group of ${SUBSCRIPTIONS_PER_CLIENT_ADDRESS} subscriptions comes from its own client address (\`X-Forwarded-For\`) within the per-client rate limit. ` +
      `A first change with no subscriptions is the baseline; then ${fmt(PER_TOPIC)} subscriptions to /reviews.json, then ${fmt(PER_TOPIC)} more to each feed (${fmt(3 * PER_TOPIC)} in all); each stage publishes one change of a ${fmt(REVIEWS)}-review dataset over NATS ` +
      'and times, from the publish call, the first and the last notification received (the hub first loads and renders the new version). ' +
      'Deliveries/s = notifications ÷ time to the last one. Memory: hub RSS before the change, its peak while fanning out (sampled every 50 ms), and after; ' +
      'bytes delivered is what per-subscriber copies of the payload would have to hold.' +
      ` ${load}`,
    targets: ['all 3,000 notifications delivered within 10 s', '≥ 300 deliveries/s', 'hub memory does not grow with subscribers × payload size'],
    commands: ['npm run bench -- fanout'],
    tables: [
      {
        columns: ['stage', 'subscriptions', 'first ms', 'last ms', 'deliveries/s', 'MiB delivered', 'duplicates', 'RSS before MiB', 'RSS peak MiB', 'RSS after MiB', 'peak − before MiB'],
        rows: [row('no subscriptions (baseline)', none), row(`${fmt(PER_TOPIC)} × reviews.json`, one), row(`${fmt(PER_TOPIC)} × each of 3 topics`, three)],
      },
    ],
    figures: {
      last_notification_ms_3000: three.lastMs,
      deliveries_per_s_3000: Math.round(rate(three)),
      last_notification_ms_1000: one.lastMs,
      rss_peak_mib_0: Math.round(none.rssPeak / 2 ** 20),
      rss_peak_mib_1000: Math.round(one.rssPeak / 2 ** 20),
      rss_peak_mib_3000: Math.round(three.rssPeak / 2 ** 20),
    },
  };
}
