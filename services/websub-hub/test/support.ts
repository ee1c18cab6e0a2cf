import { createSocket } from 'node:dgram';
import type { Resolver } from 'node:dns/promises';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer as createHttpsServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pino } from 'pino';
import { buildSnapshotFromInput, type Snapshot } from '@reviews/domain';
import type { SnapshotFollower } from '@reviews/dataset-store';
import { createHttpServer, createMetrics, loadConfig, type Logger, type Metrics } from '@reviews/runtime';
import { buildDataset } from '../../../libs/domain/test/fixtures.js';
import { createWebSubHub, type HubLimits, type WebSubHub } from '../src/hub.js';
import { jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsDatasetStore } from '@reviews/dataset-store';
import { DELIVERY_CONSUMER, DELIVERY_STREAM } from '../src/queue/nats-queue.js';
import { createNatsWebSubHub } from '../src/compose.js';

import type { TestPki } from '../../../test/support/pki.js';

export { createTestPki, type TestPki } from '../../../test/support/pki.js';
import { createMemoryJobQueue } from '../src/queue/memory-queue.js';
import { openFileSubscriptionStore } from '../src/store/file-store.js';
import { openNatsSubscriptionStore } from '../src/store/nats-store.js';
import type { SubscriptionStore } from '../src/store/subscription-store.js';
import type { OutboundTimeouts } from '../src/outbound.js';
import { recordLifetimeMs } from '../src/subscription.js';

export { waitFor } from '../../../test/support/eventually.js';

export const BASE_URL = 'https://reviews.example.com';
export const TOPIC_URLS = {
  reviews: `${BASE_URL}/reviews.json`,
  feedJson: `${BASE_URL}/api/feed.json`,
  feedAtom: `${BASE_URL}/feed.xml`,
} as const;
export const HUB_URL = `${BASE_URL}/api/websub/hub`;
export const silentLogger = pino({ level: 'silent' });
/** What the NATS store keeps writes for with the default lease bounds. */
export const KEEP_WRITES_MS = recordLifetimeMs(loadConfig({}).WEBSUB_LEASE_MAX_SECONDS);

/** The fields of a hub log line the tests read. */
export interface LogLine {
  readonly level: number;
  readonly msg: string;
  readonly err?: unknown;
  readonly error?: { readonly type: string; readonly message: string; readonly code?: unknown };
  readonly attempts?: number;
  readonly failedForMs?: number;
  readonly callbackHost?: string;
  readonly failures?: number;
  readonly subscription?: string;
  readonly mode?: string;
}

/** A debug-level logger whose every line lands in `raw` as written and in `lines` parsed. */
export function capturingLogger(): { logger: Logger; lines: LogLine[]; raw: string[] } {
  const lines: LogLine[] = [];
  const raw: string[] = [];
  const write = (line: string) => {
    raw.push(line);
    lines.push(JSON.parse(line) as LogLine);
  };
  return { logger: pino({ level: 'debug' }, { write }), lines, raw };
}

export interface Received {
  readonly method: string;
  /** Request target exactly as sent (path + raw query). */
  readonly target: string;
  readonly query: URLSearchParams;
  readonly headers: IncomingMessage['headers'];
  readonly body: Buffer;
  /** Date.now() when the request had arrived whole. */
  readonly at: number;
}

export type Reply =
  | {
      status: number;
      body?: string;
      headers?: Record<string, string>;
      delayMs?: number;
      /** Answer only once this settles. */
      answerWhen?: Promise<unknown>;
      /** Send the status line and headers at once, and the body only once this settles. */
      bodyWhen?: Promise<unknown>;
    }
  | 'echo'
  | 'hang';

/** What a subscriber answers, per request; the default echoes challenges and acknowledges notifications. */
export type Behaviour = (req: Received) => Reply;

export const defaultBehaviour: Behaviour = (req) => (req.method === 'GET' ? (req.query.has('hub.challenge') ? 'echo' : { status: 200 }) : { status: 204 });

/**
 * A real HTTPS subscriber on loopback: every callback path `/cb/<name>` records what it receives and
 * answers according to its behaviour (settable per path while the test runs).
 */
export class Subscriber {
  private readonly received = new Map<string, Received[]>();
  private readonly behaviours = new Map<string, Behaviour>();
  private readonly hanging = new Set<ServerResponse>();

  private constructor(private readonly server: Server, readonly port: number) {}

  static async start(pki: TestPki): Promise<Subscriber> {
    let self: Subscriber | null = null;
    const server = createHttpsServer({ key: pki.keyPem, cert: pki.certPem }, (req, res) => self?.handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    self = new Subscriber(server, (server.address() as AddressInfo).port);
    return self;
  }

  /** Callback URL for `name` (host `localhost` unless given), optionally with its own query. */
  url(name: string, query = '', host = 'localhost'): string {
    return `https://${host}:${this.port}/cb/${name}${query}`;
  }

  behave(name: string, behaviour: Behaviour): void {
    this.behaviours.set(name, behaviour);
  }

  requests(name: string): Received[] {
    return this.received.get(name) ?? [];
  }

  notifications(name: string): Received[] {
    return this.requests(name).filter((r) => r.method === 'POST');
  }

  /** How many notifications to `name` carried exactly `body`. */
  countReceived(name: string, body: Buffer): number {
    return this.notifications(name).filter((n) => n.body.equals(body)).length;
  }

  verifications(name: string): Received[] {
    return this.requests(name).filter((r) => r.method === 'GET' && r.query.has('hub.challenge'));
  }

  totalRequests(): number {
    let n = 0;
    for (const list of this.received.values()) n += list.length;
    return n;
  }

  /** Drop every request left hanging: the hub sees a network error at once. */
  /** Answers, with `status`, every request a 'hang' behaviour holds now: a subscriber that is slow, not dead. */
  answerHanging(status: number): void {
    for (const res of this.hanging) res.writeHead(status).end();
    this.hanging.clear();
  }

  releaseHanging(): void {
    for (const res of this.hanging) res.destroy();
    this.hanging.clear();
  }

  async close(): Promise<void> {
    this.releaseHanging();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const target = req.url ?? '/';
      const name = /^\/cb\/([^/?]+)/.exec(target)?.[1] ?? '(unknown)';
      const query = new URLSearchParams(target.includes('?') ? target.slice(target.indexOf('?') + 1) : '');
      const received: Received = { method: req.method ?? '', target, query, headers: req.headers, body: Buffer.concat(chunks), at: Date.now() };
      this.received.set(name, [...this.requests(name), received]);
      const reply = (this.behaviours.get(name) ?? defaultBehaviour)(received);
      if (reply === 'hang') {
        this.hanging.add(res);
        return;
      }
      if (reply === 'echo') {
        // The LAST hub.challenge is the hub's: the callback's own colliding parameter comes first.
        res.writeHead(200, { 'content-type': 'text/plain' }).end(query.getAll('hub.challenge').at(-1));
        return;
      }
      const answer = () => res.writeHead(reply.status, reply.headers ?? {}).end(reply.body ?? '');
      const held = reply.answerWhen ?? (reply.delayMs ? new Promise((resolve) => setTimeout(resolve, reply.delayMs)) : null);
      if (reply.bodyWhen) {
        res.writeHead(reply.status, reply.headers ?? {}).flushHeaders();
        this.hanging.add(res);
        void reply.bodyWhen.then(() => {
          this.hanging.delete(res);
          if (!res.destroyed) res.end(reply.body ?? '');
        });
      } else if (held) {
        this.hanging.add(res);
        void held.then(() => {
          this.hanging.delete(res);
          if (!res.destroyed) answer();
        });
      } else {
        answer();
      }
    });
  }
}

/** A dataset follower driven by the test: `publish` swaps in a snapshot and tells the listeners. */
export class TestFollower implements Pick<SnapshotFollower, 'current' | 'onSwap'> {
  private snapshot: Snapshot | null = null;
  private readonly listeners = new Set<(next: Snapshot, previous: Snapshot | null) => void>();

  current(): Snapshot | null {
    return this.snapshot;
  }

  onSwap(listener: (next: Snapshot, previous: Snapshot | null) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  publish(snapshot: Snapshot): void {
    const previous = this.snapshot;
    this.snapshot = snapshot;
    for (const l of this.listeners) l(snapshot, previous);
  }
}

let clock = Date.parse('2025-07-01T12:00:00Z');
/** A distinct dataset per seed, published "later" than every earlier one. */
export function snapshotFor(seed: number): Snapshot {
  clock += 60_000;
  return buildSnapshotFromInput(buildDataset({ reviews: 8, seed }), { baseUrl: BASE_URL, publishedAt: new Date(clock) });
}

export interface TestHubOptions {
  readonly pki: TestPki;
  readonly dataDir: string;
  readonly follower: Pick<SnapshotFollower, 'current' | 'onSwap'>;
  readonly env?: Record<string, string>;
  readonly limits?: Partial<HubLimits>;
  readonly timeouts?: Partial<OutboundTimeouts>;
  /** Asks the test's own DNS server for callback host names (only with WEBSUB_ALLOW_PRIVATE_CALLBACKS=false: else undici's lookup applies). */
  readonly resolver?: Resolver;
  /** Where the hub logs (silent unless given). */
  readonly logger?: Logger;
  /** Shorter than the server's 30 s: how long a request may take to arrive before node:http cuts it off with a 408. */
  readonly requestTimeoutMs?: number;
  /** Run the pod composition (NATS KV store + shared work queue) on this connection instead of file + memory. */
  readonly nats?: { readonly nc: NatsConnection; readonly ackWaitMs: number; readonly deliveryConcurrency: number };
  /** What the hub sees of its file store, e.g. another replica's writes slipped in; `RunningHub.store` is the store itself. */
  readonly wrapStore?: (store: SubscriptionStore) => SubscriptionStore;
}

export interface RunningHub {
  readonly hub: WebSubHub;
  /** The state this hub uses (file store, or a view of the NATS bucket). */
  readonly store: SubscriptionStore;
  readonly metrics: Metrics;
  readonly url: string;
  post(form: Record<string, string> | string, contentType?: string, headers?: Record<string, string>): Promise<{ status: number; text: string; headers: Headers }>;
  stop(): Promise<void>;
}

/** A hub on a loopback HTTP port, with a file store in `dataDir` and the in-process queue unless given others. */
export async function startHub(options: TestHubOptions): Promise<RunningHub> {
  const config = loadConfig({
    BASE_URL,
    DATA_DIR: options.dataDir,
    WEBSUB_ALLOW_PRIVATE_CALLBACKS: 'true',
    WEBSUB_RETRY_DELAYS_MS: '0,50,50',
    WEBSUB_LEASE_MIN_SECONDS: '60',
    WEBSUB_LEASE_DEFAULT_SECONDS: '600',
    WEBSUB_LEASE_MAX_SECONDS: '3600',
    ...options.env,
  });
  const metrics = createMetrics();
  const base = {
    config,
    logger: options.logger ?? silentLogger,
    metrics,
    snapshots: options.follower,
    outbound: { tls: { ca: options.pki.caPem }, ...(options.timeouts ? { timeouts: options.timeouts } : {}), ...(options.resolver ? { resolver: options.resolver } : {}) },
    limits: { perClient: { burst: 1000, perMinute: 6000 }, perCallbackHost: { burst: 1000, perMinute: 6000 }, sweepIntervalMs: 100, ...options.limits },
  };
  let hub: WebSubHub;
  let store: SubscriptionStore;
  if (options.nats) {
    const { nc, ackWaitMs, deliveryConcurrency } = options.nats;
    hub = await createNatsWebSubHub({ ...base, limits: { ...base.limits, deliveryConcurrency }, nc, ackWaitMs });
    store = await openNatsSubscriptionStore(jetstream(nc), { logger: silentLogger, keepWritesMs: KEEP_WRITES_MS });
  } else {
    store = await openFileSubscriptionStore(config.DATA_DIR);
    hub = createWebSubHub({ ...base, store: options.wrapStore?.(store) ?? store, queue: createMemoryJobQueue({ concurrency: options.limits?.deliveryConcurrency ?? 16, logger: silentLogger }) });
  }
  await hub.start();
  const server = createHttpServer(hub.handler);
  if (options.requestTimeoutMs !== undefined) {
    server.headersTimeout = options.requestTimeoutMs;
    server.requestTimeout = options.requestTimeoutMs;
    // node:http checks for timed-out requests this often (30 s unless set); it reads it at listen.
    Object.assign(server, { connectionsCheckingInterval: 50 });
  }
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/websub/hub`;
  return {
    hub,
    store,
    metrics,
    url,
    async post(form, contentType = 'application/x-www-form-urlencoded', headers = {}) {
      const body = typeof form === 'string' ? form : new URLSearchParams(form).toString();
      const response = await fetch(url, { method: 'POST', headers: { 'content-type': contentType, ...headers }, body });
      return { status: response.status, text: await response.text(), headers: response.headers };
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await hub.close();
      await store.close();
    },
  };
}

/** Current value of one series of a counter/gauge in the hub's registry (0 when absent). */
export async function metricValue(metrics: Metrics, name: string, labels: Record<string, string> = {}): Promise<number> {
  const metric = metrics.registry.getSingleMetric(name);
  if (!metric) return 0;
  const data = await metric.get();
  const match = data.values.find((v) => Object.entries(labels).every(([k, val]) => v.labels[k] === val));
  return match?.value ?? 0;
}

export async function tempDir(prefix: string): Promise<{ path: string; remove: () => Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), prefix));
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}

/** Publish a fresh 8-review dataset over NATS; returns the reviews-topic bytes every subscriber must receive. */
export async function publishReviews(datasets: NatsDatasetStore, seed: number): Promise<Buffer> {
  const input = buildDataset({ reviews: 8, seed });
  await datasets.publish(input);
  return buildSnapshotFromInput(input, { baseUrl: BASE_URL, publishedAt: new Date() }).topic('reviews').identity.body;
}

/** The shared delivery consumer: jobs waiting, jobs a replica holds, and how many it ever handed out. */
export async function deliveryConsumerState(nc: NatsConnection): Promise<{ waiting: number; held: number; handedOut: number }> {
  const info = await (await jetstreamManager(nc)).consumers.info(DELIVERY_STREAM, DELIVERY_CONSUMER);
  return { waiting: info.num_pending, held: info.num_ack_pending, handedOut: info.delivered.consumer_seq };
}

/** True once the hub replicas' shared delivery consumer holds nothing pending or unacknowledged. */
export async function deliveryQueueDrained(nc: NatsConnection): Promise<boolean> {
  const { waiting, held } = await deliveryConsumerState(nc);
  return waiting + held === 0;
}

/** A DNS server on loopback: answers A queries for the names in `answers` (one record per address), an empty NOERROR for their AAAA, and never answers any other name. */
export async function dnsServer(answers: Record<string, string | readonly string[]>): Promise<{ address: string; queries: string[]; close: () => void }> {
  const socket = createSocket('udp4');
  const queries: string[] = [];
  socket.on('message', (query, peer) => {
    // The header (12 bytes), then the question: length-prefixed labels up to a zero byte, its type and class.
    const labels: string[] = [];
    let at = 12;
    while (query[at] !== 0) {
      const length = query[at]!;
      labels.push(query.subarray(at + 1, at + 1 + length).toString());
      at += length + 1;
    }
    const name = labels.join('.').toLowerCase();
    queries.push(name);
    const known = answers[name];
    if (known === undefined) return;
    const isA = query.readUInt16BE(at + 1) === 1;
    const addresses = isA ? (typeof known === 'string' ? [known] : known) : [];
    const records = addresses.map((address) => Buffer.from([0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, ...address.split('.').map(Number)]));
    const header = Buffer.from(query.subarray(0, 12));
    header.writeUInt16BE(0x8180, 2);
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(records.length, 6);
    header.writeUInt32BE(0, 8);
    socket.send(Buffer.concat([header, query.subarray(12, at + 5), ...records]), peer.port, peer.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return { address: `127.0.0.1:${socket.address().port}`, queries, close: () => socket.close() };
}
