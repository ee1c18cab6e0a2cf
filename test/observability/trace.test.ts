import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Server } from 'node:http';
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { followSnapshots, NatsDatasetSource, NatsDatasetStore, openDatasetSource, type SnapshotFollower } from '@reviews/dataset-store';
import { buildSnapshotFromInput } from '@reviews/domain';
import { activeTraceIds, createHttpServer, createMetrics, SpanKind, withSpan } from '@reviews/runtime';
import { createReadApi, SERVICE as READ_API } from '@reviews/read-api';
import { buildDataset } from '../../libs/domain/test/fixtures.js';
import { BASE_URL, createTestPki, silentLogger, startHub, Subscriber, tempDir, TOPIC_URLS, waitFor, type RunningHub } from '../../services/websub-hub/test/support.js';
import { startNatsServer, type NatsServerHandle } from '../support/nats-server.js';

// The SDK as the instrumentation preload would register it, but exporting to memory.
const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const contextManager = new AsyncLocalStorageContextManager().enable();

let nats: NatsServerHandle;
let publisher: NatsConnection;
let hubConnection: NatsConnection;
let datasets: NatsDatasetStore;
let readApi: { follower: SnapshotFollower; server: Server };
let hubFollower: SnapshotFollower;
let hub: RunningHub;
let subscriber: Subscriber;
let dir: { path: string; remove: () => Promise<void> };

beforeAll(async () => {
  trace.setGlobalTracerProvider(provider);
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());

  nats = await startNatsServer();
  publisher = await connect({ servers: nats.url, name: 'trace-test-publisher' });
  datasets = await NatsDatasetStore.open(publisher, 1);
  await datasets.publish(buildDataset({ reviews: 8, seed: 1 }));

  // A read-api replica as its pod runs it, in process.
  const metrics = createMetrics();
  const source = await openDatasetSource({ NATS_URL: nats.url, NATS_REPLICAS: 1, DATASET_FILE: 'unused.json' }, { logger: silentLogger, metrics, service: READ_API });
  const follower = await followSnapshots(source, { baseUrl: BASE_URL, logger: silentLogger, metrics, service: READ_API });
  const server = createHttpServer(createReadApi({ logger: silentLogger, metrics, snapshots: follower }));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  readApi = { follower, server };

  // A websub-hub replica: its own NATS dataset follower, shared store and work queue in JetStream.
  const hubMetrics = createMetrics();
  hubFollower = await followSnapshots(new NatsDatasetSource({ nats: { servers: nats.url }, replicas: 1, service: 'websub-hub', logger: silentLogger, registry: hubMetrics.registry }), {
    baseUrl: BASE_URL,
    logger: silentLogger,
    metrics: hubMetrics,
    service: 'websub-hub',
  });
  hubConnection = await connect({ servers: nats.url, name: 'trace-test-hub' });
  const pki = await createTestPki();
  subscriber = await Subscriber.start(pki);
  dir = await tempDir('trace-test-');
  hub = await startHub({ pki, dataDir: dir.path, follower: hubFollower, nats: { nc: hubConnection, ackWaitMs: 5_000, deliveryConcurrency: 2 } });
});

afterAll(async () => {
  await hub?.stop();
  await hubConnection?.drain();
  await hubFollower?.close();
  if (readApi) {
    readApi.server.closeAllConnections();
    await new Promise<void>((resolve) => readApi.server.close(() => resolve()));
    await readApi.follower.close();
  }
  await subscriber?.close();
  await publisher?.close();
  await nats?.dispose();
  await dir?.remove();
  await provider.shutdown();
  contextManager.disable();
  trace.disable();
  context.disable();
  propagation.disable();
});

const spansNamed = (name: string, version: string): ReadableSpan[] =>
  exporter.getFinishedSpans().filter((s) => s.name === name && (s.attributes['dataset.version'] === undefined || s.attributes['dataset.version'] === version));

describe('tracing across NATS', () => {
  it('publish -> read-api rebuild -> hub announcement -> delivery is one trace', async () => {
    const res = await hub.post({ 'hub.mode': 'subscribe', 'hub.topic': TOPIC_URLS.reviews, 'hub.callback': subscriber.url('traced') });
    expect(res.status).toBe(202);
    await waitFor(async () => (await hub.store.list()).length === 1, 10_000, 'subscription verified');
    exporter.reset();

    const input = buildDataset({ reviews: 8, seed: 2 });
    const expected = buildSnapshotFromInput(input, { baseUrl: BASE_URL, publishedAt: new Date() });
    const { traceId, outcome } = await withSpan('test publish', { kind: SpanKind.PRODUCER }, async () => ({ traceId: activeTraceIds()?.trace_id, outcome: await datasets.publish(input) }));
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(outcome.pointer.traceparent).toContain(traceId);

    const body = expected.topic('reviews').identity.body;
    await waitFor(() => subscriber.notifications('traced').some((n) => n.body.equals(body)), 15_000, 'the subscriber notified of the new dataset');
    await waitFor(() => readApi.follower.current()?.version === outcome.version, 10_000, 'read-api serving the new dataset');
    // The announcement ends after all three topics are queued, possibly after the first delivery.
    await waitFor(() => spansNamed('websub deliver', outcome.version).length > 0 && spansNamed('websub announce', outcome.version).length > 0, 5_000, 'the announce and delivery spans ended');

    const version = outcome.version;
    const receives = spansNamed('dataset receive', version);
    // One rebuild in the read-api replica, one in the hub replica.
    expect(receives).toHaveLength(2);
    expect(spansNamed('dataset build', version)).toHaveLength(2);
    const chain = [...receives, ...spansNamed('dataset build', version), ...spansNamed('websub announce', version), ...spansNamed('websub deliver', version)];
    expect(chain.map((s) => s.name)).toEqual(expect.arrayContaining(['dataset receive', 'dataset build', 'websub announce', 'websub deliver']));
    for (const span of chain) expect({ name: span.name, traceId: span.spanContext().traceId }).toEqual({ name: span.name, traceId });
  });
});
