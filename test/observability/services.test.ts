import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { followSnapshots, NatsDatasetStore, openDatasetSource, type SnapshotFollower } from '@reviews/dataset-store';
import { buildSnapshotFromInput } from '@reviews/domain';
import { createLogger, createMetrics, loadConfig, startHttpService, type HttpService, type Metrics, type RequestHandler } from '@reviews/runtime';
import { createReadApi } from '@reviews/read-api';
import { createMcpGateway } from '@reviews/mcp-gateway';
import { createNatsWebSubHub, HUB_ROUTE, hubPodHandler, type WebSubHub } from '@reviews/websub-hub';
import { buildDataset } from '../../libs/domain/test/fixtures.js';
import { connectClient } from '../../services/mcp-gateway/test/helpers.js';
import { BASE_URL, createTestPki, Subscriber, TOPIC_URLS, waitFor } from '../../services/websub-hub/test/support.js';
import { startNatsServer, type NatsServerHandle } from '../support/nats-server.js';
import { dashboardExpressions, familyName, metricNames, repoRoot, ruleExpressions } from './assets.js';

const MCP_SESSION_SECRET = 'mcp-session-secret-for-the-log-test-0123456789';
const HUB_SECRET = 'hub-secret-for-the-log-test-abcdef';
const BEARER = 'bearer-token-for-the-log-test-9f8e7d';

interface Running {
  readonly service: HttpService;
  readonly metrics: Metrics;
  readonly follower: SnapshotFollower;
  /** Every line the service logged, at trace level. */
  readonly lines: string[];
}

let nats: NatsServerHandle;
let publisher: NatsConnection;
let hubConnection: NatsConnection;
let datasets: NatsDatasetStore;
let subscriber: Subscriber;
let hub: WebSubHub;
const services: Record<'read-api' | 'mcp-gateway' | 'websub-hub', Running> = {} as never;

const config = (extra: Record<string, string> = {}) =>
  loadConfig({ BASE_URL, NATS_URL: nats.url, PORT: '0', METRICS_PORT: '0', DATA_DIR: '/nonexistent', MCP_SESSION_SECRET, WEBSUB_ALLOW_PRIVATE_CALLBACKS: 'true', ...extra });

/** One service as its main.ts runs it (NATS dataset source, metrics port, logs), on loopback ports. */
async function start(name: keyof typeof services, handlerFor: (deps: { logger: ReturnType<typeof createLogger>; metrics: Metrics; follower: SnapshotFollower }) => Promise<RequestHandler>): Promise<void> {
  const lines: string[] = [];
  const logger = createLogger(name, 'trace', { write: (line: string) => void lines.push(line) });
  const metrics = createMetrics(name);
  const cfg = config();
  const follower = await followSnapshots(await openDatasetSource(cfg, { logger, metrics, service: name }), { baseUrl: cfg.BASE_URL, logger, metrics, service: name });
  const handler = await handlerFor({ logger, metrics, follower });
  const service = await startHttpService({ service: name, port: 0, metricsPort: 0, host: '127.0.0.1', shutdownTimeoutMs: 2_000, logger, metrics, handler, readiness: () => follower.health() });
  service.onClose(() => follower.close());
  services[name] = { service, metrics, follower, lines };
}

async function scrape(name: keyof typeof services): Promise<string> {
  const response = await fetch(`${services[name].service.metricsUrl}/metrics`);
  expect(response.status).toBe(200);
  return response.text();
}

/** Metric names in the docs/operations.md reference table. */
function documentedMetrics(): string[] {
  const doc = readFileSync(join(repoRoot, 'docs/operations.md'), 'utf8');
  return [...doc.matchAll(/^\| `([a-z_]+)` \|/gm)].map((m) => m[1]!);
}

beforeAll(async () => {
  nats = await startNatsServer();
  publisher = await connect({ servers: nats.url, name: 'observability-test' });
  datasets = await NatsDatasetStore.open(publisher, 1);
  await datasets.publish(buildDataset({ reviews: 12, seed: 5 }));
  const pki = await createTestPki();
  subscriber = await Subscriber.start(pki);
  hubConnection = await connect({ servers: nats.url, name: 'observability-test-hub' });

  await start('read-api', async ({ logger, metrics, follower }) => createReadApi({ logger, metrics, snapshots: follower }));
  await start('mcp-gateway', async ({ logger, metrics, follower }) => createMcpGateway({ config: config(), logger, metrics, snapshots: follower }));
  await start('websub-hub', async ({ logger, metrics, follower }) => {
    hub = await createNatsWebSubHub({ config: config({ WEBSUB_RETRY_DELAYS_MS: '0,50,50' }), logger, metrics, snapshots: follower, nc: hubConnection, outbound: { tls: { ca: pki.caPem } } });
    await hub.start();
    return hubPodHandler(hub, { metrics, logger });
  });
  // Closed as main.ts does: the hub first, then its NATS connection, then the dataset follower.
  services['websub-hub'].service.onClose(() => hubConnection.drain());
  services['websub-hub'].service.onClose(() => hub.close());

  // Real traffic on every service.
  const readApi = services['read-api'].service.url;
  const authorization = { authorization: `Bearer ${BEARER}` };
  for (const path of ['/reviews.json', '/api/reviews/search?rating=5', '/api/reviews/since/2020-01-01', '/no-such-path']) await (await fetch(readApi + path, { headers: authorization })).arrayBuffer();

  const { client } = await connectClient(`${services['mcp-gateway'].service.url}/mcp`);
  await client.callTool({ name: 'search_reviews', arguments: { rating: 5 } });
  await client.callTool({ name: 'get_review', arguments: { id: '01ARZ3NDEKTSV4RRFFQ69G5FAV' } });
  await client.close();

  const subscribe = await fetch(services['websub-hub'].service.url + HUB_ROUTE, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...authorization },
    body: new URLSearchParams({ 'hub.mode': 'subscribe', 'hub.topic': TOPIC_URLS.reviews, 'hub.callback': subscriber.url('observed'), 'hub.secret': HUB_SECRET }),
  });
  expect(subscribe.status).toBe(202);
  await (await fetch(`${services['websub-hub'].service.url}/reviews.json`)).arrayBuffer();
  await waitFor(() => subscriber.verifications('observed').length === 1, 10_000, 'verification of intent');
  await waitFor(async () => services['websub-hub'].lines.some((l) => l.includes('subscription verified')), 10_000, 'subscription stored');
  const next = buildDataset({ reviews: 12, seed: 6 });
  await datasets.publish(next);
  const body = buildSnapshotFromInput(next, { baseUrl: BASE_URL, publishedAt: new Date() }).topic('reviews').identity.body;
  await waitFor(() => subscriber.notifications('observed').some((n) => n.body.equals(body)), 15_000, 'notification delivered');
  await waitFor(() => Object.values(services).every((s) => s.follower.current()?.topic('reviews').identity.body.equals(body) ?? false), 10_000, 'every service on the new dataset');
});

afterAll(async () => {
  for (const running of Object.values(services)) await running.service.shutdown('test done');
  await subscriber?.close();
  await publisher?.close();
  await nats?.dispose();
});

describe('/metrics of each service after real traffic', () => {
  it('exposes every documented metric family, each on the services that produce it', async () => {
    const documented = documentedMetrics();
    expect(documented.length).toBeGreaterThan(15);
    const owner = (metric: string) => (metric.startsWith('mcp_') ? 'mcp-gateway' : metric.startsWith('websub_') ? 'websub-hub' : null);
    for (const name of Object.keys(services) as (keyof typeof services)[]) {
      const text = await scrape(name);
      const families = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]));
      for (const metric of documented) if (owner(metric) === null || owner(metric) === name) expect({ name, metric, exposed: families.has(metric) }).toEqual({ name, metric, exposed: true });
      expect(families).toContain('process_resident_memory_bytes');
      expect(families).toContain('nodejs_eventloop_lag_p99_seconds');
      const version = services[name].follower.current()?.version;
      expect(text).toContain(`dataset_info{service="${name}",version="${version}"} 1`);
      expect(text).toContain(`nats_connected{service="${name}"} 1`);
      expect(text).toMatch(new RegExp(`^dataset_propagation_seconds_count\\{service="${name}"\\} [1-9]`, 'm'));
    }
  });

  it('labels requests by route template and status, fast path included; never by raw path', async () => {
    const readApi = await scrape('read-api');
    for (const route of ['/reviews.json', '/api/reviews/search', '/api/reviews/since/:date']) {
      expect(readApi).toContain(`http_request_duration_seconds_count{service="read-api",method="GET",route="${route}",status_code="200"} 1`);
    }
    expect(readApi).toContain('http_request_duration_seconds_count{service="read-api",method="GET",route="unmatched",status_code="404"} 1');
    expect(readApi).not.toMatch(/2020-01-01|no-such-path|rating=5/);
    expect(await scrape('mcp-gateway')).toMatch(/^http_request_duration_seconds_count\{service="mcp-gateway",method="POST",route="\/mcp",status_code="200"\} [1-9]/m);
    const hub = await scrape('websub-hub');
    expect(hub).toContain('http_request_duration_seconds_count{service="websub-hub",method="POST",route="/api/websub/hub",status_code="202"} 1');
    expect(hub).toContain('http_request_duration_seconds_count{service="websub-hub",method="GET",route="unmatched",status_code="404"} 1');
    // The process's own series carry the service label like the request series.
    expect(hub).toMatch(/^process_resident_memory_bytes\{service="websub-hub"\} \d+/m);
  });

  it('counts MCP tool calls by tool and outcome, and sessions', async () => {
    const text = await scrape('mcp-gateway');
    expect(text).toContain('mcp_tool_calls_total{tool="search_reviews",outcome="ok"} 1');
    expect(text).toContain('mcp_tool_calls_total{tool="get_review",outcome="error"} 1');
    expect(text).toContain('mcp_sessions_initialized_total 1');
    // Tools not called yet are listed at 0, so rate() sees their first call (the observability audit).
    expect(text).toContain('mcp_tool_calls_total{tool="get_faq",outcome="error"} 0');
    expect(text).toContain('mcp_tool_calls_total{tool="unknown",outcome="ok"} 0');
  });

  it('counts hub requests, verifications, deliveries, subscriptions and queue depth', async () => {
    const text = await scrape('websub-hub');
    expect(text).toContain('websub_requests_total{mode="subscribe",outcome="accepted"} 1');
    expect(text).toContain('websub_verifications_total{mode="subscribe",outcome="verified"} 1');
    expect(text).toContain('websub_verifications_total{mode="subscribe",outcome="timeout"} 0');
    expect(text).toContain('websub_verifications_total{mode="unsubscribe",outcome="busy"} 0');
    expect(text).toContain('websub_deliveries_total{topic="reviews",outcome="success"} 1');
    expect(text).toContain('websub_delivery_duration_seconds_count{topic="reviews"} 1');
    expect(text).toContain('websub_subscriptions{state="active"} 1');
    expect(text).toMatch(/^websub_queue_depth \d+$/m);
  });

  it('every metric a dashboard or alert rule uses exists in the services\' registries', () => {
    const registered = new Set(Object.values(services).flatMap((s) => s.metrics.registry.getMetricsAsArray().map((m) => m.name)));
    const used = [...dashboardExpressions(), ...ruleExpressions()].flatMap(({ expr }) => metricNames(expr).map((name) => ({ expr, family: familyName(name) })));
    expect(used.length).toBeGreaterThan(20);
    // `up` is Prometheus's own series for every scraped target.
    const missing = used.filter(({ family }) => family !== 'up' && !registered.has(family));
    expect(missing).toEqual([]);
  });
});

describe('logs', () => {
  const parsed = (name: keyof typeof services) => services[name].lines.map((line) => JSON.parse(line) as Record<string, unknown>);

  it('one JSON line per request at info: method, route template, status, duration', () => {
    const requests = parsed('read-api').filter((l) => l.msg === 'request');
    expect(requests.map((l) => [l.method, l.route, l.status])).toEqual([
      ['GET', '/reviews.json', 200],
      ['GET', '/api/reviews/search', 200],
      ['GET', '/api/reviews/since/:date', 200],
      ['GET', 'unmatched', 404],
    ]);
    for (const line of requests) expect(line).toMatchObject({ level: 30, service: 'read-api', duration_ms: expect.any(Number) });
    expect(parsed('mcp-gateway').filter((l) => l.msg === 'request' && l.route === '/mcp').length).toBeGreaterThanOrEqual(4);
    expect(parsed('websub-hub').filter((l) => l.msg === 'request')).toEqual([expect.objectContaining({ method: 'POST', route: HUB_ROUTE, status: 202 }), expect.objectContaining({ method: 'GET', route: 'unmatched', status: 404 })]);
  });

  it('never contain hub.secret, MCP_SESSION_SECRET or an Authorization value, even at trace level', () => {
    const all = Object.values(services).flatMap((s) => s.lines);
    expect(all.length).toBeGreaterThan(20);
    for (const secret of [HUB_SECRET, MCP_SESSION_SECRET, BEARER]) expect(all.filter((line) => line.includes(secret))).toEqual([]);
  });
});
