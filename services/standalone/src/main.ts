import { FileDatasetSource, followSnapshots } from '@reviews/dataset-store';
import { createLogger, createMetrics, loadConfigOrExit, runOrExitOnConfigError, startHttpService } from '@reviews/runtime';
import { createStandaloneApp } from './app.js';

const SERVICE = 'standalone';

// Everything in one process, one port, no NATS: datasets come from DATASET_FILE, reloaded on change.
// An invalid file is logged and refused; the process stays up (503 on /readyz) until a valid one appears.
const config = loadConfigOrExit(SERVICE);
const logger = createLogger(SERVICE, config.LOG_LEVEL);
const metrics = createMetrics();
const source = new FileDatasetSource(config.DATASET_FILE, { logger });
const snapshots = await followSnapshots(source, { baseUrl: config.BASE_URL, logger, metrics, service: SERVICE });
// A bad MCP_ALLOWED_ORIGINS or MCP_SESSION_SECRET surfaces here: named on stderr, exit 1.
const app = await runOrExitOnConfigError(SERVICE, () => createStandaloneApp({ config, logger, metrics, snapshots }));
const service = await startHttpService({
  service: SERVICE,
  port: config.PORT,
  metricsPort: config.METRICS_PORT,
  shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
  logger,
  metrics,
  handler: app.handler,
  readiness: () => snapshots.health(),
  handleSignals: true,
});
service.onClose(() => snapshots.close());
service.onClose(() => app.close());
