import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { followSnapshots, NatsDatasetSource, NatsDatasetStore } from '@reviews/dataset-store';
import { composeRoutes, createMetrics, loadConfig, sendNotFound, startHttpService, type HttpService } from '@reviews/runtime';
import { createNatsWebSubHub, HUB_ROUTE, HUB_SERVICE } from '@reviews/websub-hub';
import { BASE_URL, createTestPki, deliveryQueueDrained, publishReviews, silentLogger, Subscriber, TOPIC_URLS, waitFor, type TestPki } from '../../services/websub-hub/test/support.js';
import { startNatsServer, type NatsServerHandle } from '../support/nats-server.js';

/**
 * Far longer than the test waits: a job must reach another replica because the stopping one
 * released it, never because its ack deadline ran out.
 */
const ACK_WAIT_MS = 60_000;
const SUBSCRIBERS = Array.from({ length: 10 }, (_, i) => `sub-${i}`);
const SLOW_DELIVERY_MS = 300;

let nats: NatsServerHandle;
let publisher: NatsConnection;
let datasets: NatsDatasetStore;
let pki: TestPki;
let subscriber: Subscriber;
const replicas = new Set<HttpService>();

/** A websub-hub replica wired exactly as services/websub-hub/src/main.ts does, SIGTERM path included. */
async function startReplica(name: string): Promise<HttpService> {
  const config = loadConfig({ BASE_URL, NATS_URL: nats.url, PORT: '0', METRICS_PORT: '0', WEBSUB_ALLOW_PRIVATE_CALLBACKS: 'true', WEBSUB_RETRY_DELAYS_MS: '0,50,50' });
  const metrics = createMetrics();
  const snapshots = await followSnapshots(new NatsDatasetSource({ servers: nats.url, replicas: 1, service: name, logger: silentLogger, registry: metrics.registry }), {
    baseUrl: BASE_URL,
    logger: silentLogger,
    metrics,
    service: HUB_SERVICE,
  });
  const nc = await connect({ servers: nats.url, name });
  const hub = await createNatsWebSubHub({
    config,
    logger: silentLogger,
    metrics,
    snapshots,
    nc,
    ackWaitMs: ACK_WAIT_MS,
    outbound: { tls: { ca: pki.caPem } },
    limits: { deliveryConcurrency: 2, perClient: { burst: 1000, perMinute: 6000 } },
  });
  await hub.start();
  const service = await startHttpService({
    service: HUB_SERVICE,
    port: 0,
    metricsPort: 0,
    host: '127.0.0.1',
    shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
    logger: silentLogger,
    metrics,
    handler: composeRoutes({ [HUB_ROUTE]: hub.handler }, (_req, res) => sendNotFound(res)),
    readiness: () => snapshots.health(),
  });
  service.onStopAcceptingWork(() => snapshots.close());
  service.onClose(() => nc.drain());
  service.onClose(() => hub.close());
  replicas.add(service);
  return service;
}

/** What the SIGTERM handler runs; resolves when the replica is gone. Returns how long it took. */
async function sigterm(replica: HttpService): Promise<number> {
  const started = Date.now();
  await replica.shutdown('SIGTERM');
  replicas.delete(replica);
  return Date.now() - started;
}

const publish = (seed: number) => publishReviews(datasets, seed);
const queueDrained = () => deliveryQueueDrained(publisher);
const received = (name: string, body: Buffer) => subscriber.countReceived(name, body);


beforeAll(async () => {
  nats = await startNatsServer();
  publisher = await connect({ servers: nats.url, name: 'shutdown-test-publisher' });
  datasets = await NatsDatasetStore.open(publisher, 1);
  pki = await createTestPki();
  subscriber = await Subscriber.start(pki);
  await publish(1);
});

afterAll(async () => {
  for (const replica of [...replicas]) await sigterm(replica);
  await subscriber?.close();
  await publisher?.close();
  await nats?.dispose();
});

describe('SIGTERM during a fan-out (NATS work queue)', () => {
  let a: HttpService;
  let b: HttpService;

  beforeAll(async () => {
    [a, b] = await Promise.all([startReplica('hub-a'), startReplica('hub-b')]);
    for (const name of SUBSCRIBERS) {
      const res = await fetch(a.url + HUB_ROUTE, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ 'hub.mode': 'subscribe', 'hub.topic': TOPIC_URLS.reviews, 'hub.callback': subscriber.url(name) }) });
      expect(res.status).toBe(202);
    }
    await waitFor(() => SUBSCRIBERS.every((n) => subscriber.verifications(n).length === 1), 10_000, 'every subscription verified');
    // Verified means stored a moment later; the next announcement must see all of them.
    await waitFor(async () => (await fetch(b.metricsUrl + '/metrics').then((r) => r.text())).includes(`websub_subscriptions{state="active"} ${SUBSCRIBERS.length}`), 10_000, 'subscriptions stored');
    for (const name of SUBSCRIBERS) subscriber.behave(name, (req) => (req.method === 'POST' ? { status: 204, delayMs: SLOW_DELIVERY_MS } : 'echo'));
  });

  it('the stopping replica finishes its deliveries, releases the rest, and the other replica delivers them: each subscriber gets the change once', async () => {
    const body = await publish(2);
    await waitFor(() => SUBSCRIBERS.some((n) => received(n, body) >= 1), 10_000, 'fan-out under way');
    const took = await sigterm(a);
    // Bounded: in-flight POSTs take SLOW_DELIVERY_MS; nothing waits for an ack deadline.
    expect(took).toBeLessThan(5_000);
    await waitFor(() => SUBSCRIBERS.every((n) => received(n, body) >= 1), 10_000, 'every subscriber notified');
    await waitFor(queueDrained, 10_000, 'delivery queue drained');
    // Deliveries in flight at SIGTERM were completed and acked, not handed out again.
    for (const name of SUBSCRIBERS) expect({ name, notifications: received(name, body) }).toEqual({ name, notifications: 1 });
  });

  it('when the last replica stops mid-fan-out, a restarted one delivers the rest', async () => {
    const body = await publish(3);
    await waitFor(() => SUBSCRIBERS.some((n) => received(n, body) >= 1), 10_000, 'fan-out under way');
    expect(await sigterm(b)).toBeLessThan(5_000);
    const delivered = SUBSCRIBERS.filter((n) => received(n, body) === 1).length;
    expect(delivered).toBeLessThan(SUBSCRIBERS.length);
    await startReplica('hub-c');
    await waitFor(() => SUBSCRIBERS.every((n) => received(n, body) >= 1), 10_000, 'every subscriber notified after the restart');
    await waitFor(queueDrained, 10_000, 'delivery queue drained');
    for (const name of SUBSCRIBERS) expect({ name, notifications: received(name, body) }).toEqual({ name, notifications: 1 });
  });
});
