import { connect } from '@nats-io/transport-node';
import { followSnapshots, openDatasetSource } from '@reviews/dataset-store';
import { composeRoutes, createLogger, createMetrics, loadConfigOrExit, sendNotFound, startHttpService } from '@reviews/runtime';
import { createNatsWebSubHub } from './compose.js';
import { HUB_ROUTE, HUB_SERVICE as SERVICE } from './hub.js';

// websub-hub as it runs in a pod: shared state and delivery work in NATS JetStream, so any number
// of replicas fan out each change once per subscription.
const config = loadConfigOrExit(SERVICE);
const logger = createLogger(SERVICE, config.LOG_LEVEL);
if (config.NATS_URL === undefined) {
  logger.fatal('NATS_URL is required: replicas share subscriptions over NATS (the standalone `npm start` runs the hub without it)');
  process.exit(1);
}
const metrics = createMetrics();
const snapshots = await followSnapshots(await openDatasetSource(config, { logger, metrics, service: SERVICE }), { baseUrl: config.BASE_URL, logger, metrics, service: SERVICE });
const nc = await connect({
  servers: config.NATS_URL.split(',').map((s) => s.trim()),
  name: SERVICE,
  waitOnFirstConnect: true,
  maxReconnectAttempts: -1,
});
const hub = await createNatsWebSubHub({ config, logger, metrics, snapshots, nc, replicas: config.NATS_REPLICAS });
await hub.start();
const service = await startHttpService({
  service: SERVICE,
  port: config.PORT,
  metricsPort: config.METRICS_PORT,
  shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
  logger,
  metrics,
  handler: composeRoutes({ [HUB_ROUTE]: hub.handler }, (_req, res) => sendNotFound(res)),
  readiness: () => snapshots.health(),
  handleSignals: true,
});
service.onClose(() => snapshots.close());
service.onClose(() => nc.drain());
service.onClose(() => hub.close());
