import { followSnapshots, openDatasetSource } from '@reviews/dataset-store';
import { createLogger, createMetrics, loadConfigOrExit, startHttpService } from '@reviews/runtime';
import { createReadApi, SERVICE } from './app.js';

// read-api as it runs in a pod: configuration from the environment only.
const config = loadConfigOrExit(SERVICE);
const logger = createLogger(SERVICE, config.LOG_LEVEL);
const metrics = createMetrics();
const snapshots = await followSnapshots(await openDatasetSource(config, { logger, metrics, service: SERVICE }), { baseUrl: config.BASE_URL, logger, metrics, service: SERVICE });
const service = await startHttpService({
  service: SERVICE,
  port: config.PORT,
  metricsPort: config.METRICS_PORT,
  shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
  logger,
  metrics,
  handler: createReadApi({ logger, metrics, snapshots }),
  readiness: () => snapshots.health(),
  handleSignals: true,
});
service.onClose(() => snapshots.close());
