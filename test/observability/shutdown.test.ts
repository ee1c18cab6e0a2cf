import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { followSnapshots, NatsDatasetSource, NatsDatasetStore } from '@reviews/dataset-store';
import { composeRoutes, createMetrics, loadConfig, sendNotFound, startHttpService, type HttpService } from '@reviews/runtime';
import { createNatsWebSubHub, HUB_ROUTE, HUB_SERVICE } from '@reviews/websub-hub';
import { connect as connectTcp, type Socket } from 'node:net';
import { BASE_URL, createTestPki, deliveryConsumerState, deliveryQueueDrained, publishReviews, silentLogger, Subscriber, TOPIC_URLS, waitFor, type TestPki } from '../../services/websub-hub/test/support.js';
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
  const snapshots = await followSnapshots(new NatsDatasetSource({ nats: { servers: nats.url }, replicas: 1, service: name, logger: silentLogger, registry: metrics.registry }), {
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
  service.onStopAcceptingWork(() => hub.stopTakingWork());
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

const UNSUPPORTED_MODE_BODY = 'hub.mode=none';
/**
 * A hub request the server is handling (its `100 Continue` came back) whose body has not been sent:
 * it keeps the replica's HTTP drain open until the test ends it.
 */
async function requestInFlight(baseUrl: string): Promise<Socket> {
  const { hostname, port } = new URL(baseUrl);
  const socket = connectTcp(Number(port), hostname);
  socket.write(
    `POST ${HUB_ROUTE} HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/x-www-form-urlencoded\r\n` +
      `Content-Length: ${UNSUPPORTED_MODE_BODY.length}\r\nExpect: 100-continue\r\n\r\n`,
  );
  let answer = '';
  socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
  await waitFor(() => answer.startsWith('HTTP/1.1 100 Continue'), 10_000, 'the request under way');
  return socket;
}
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

  // The HTTP drain can last up to SHUTDOWN_TIMEOUT_MS; jobs pulled meanwhile would hold the pod
  // past it instead of going to a replica that stays.
  it('takes no delivery job once SIGTERM arrives, though a request still drains; the jobs left go to the next replica', async () => {
    const [c] = [...replicas] as [HttpService];
    let release = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    for (const name of SUBSCRIBERS) subscriber.behave(name, (req) => (req.method === 'POST' ? { status: 204, answerWhen: gate } : 'echo'));
    const body = await publish(4);
    // Both of the replica's delivery slots are taken, so it pulls nothing more until one frees.
    await waitFor(() => SUBSCRIBERS.filter((n) => received(n, body) === 1).length === 2, 10_000, 'two deliveries in flight');
    const handedOutBefore = (await deliveryConsumerState(publisher)).handedOut;
    const request = await requestInFlight(c.url);
    const stopped = sigterm(c);
    release();
    await waitFor(async () => (await deliveryConsumerState(publisher)).held === 0, 10_000, 'deliveries in flight acknowledged');
    const state = await deliveryConsumerState(publisher);
    expect(state.handedOut).toBe(handedOutBefore);
    expect(state.waiting).toBe(SUBSCRIBERS.length - 2);
    request.end(UNSUPPORTED_MODE_BODY);
    expect(await stopped).toBeLessThan(5_000);
    await startReplica('hub-d');
    await waitFor(() => SUBSCRIBERS.every((n) => received(n, body) >= 1), 10_000, 'every subscriber notified by the next replica');
    await waitFor(queueDrained, 10_000, 'delivery queue drained');
    for (const name of SUBSCRIBERS) expect({ name, notifications: received(name, body) }).toEqual({ name, notifications: 1 });
  });
});
