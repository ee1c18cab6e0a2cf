import { followSnapshots, openDatasetSource, type SnapshotFollower } from '@reviews/dataset-store';
import { createLogger, createMetrics, loadConfigOrExit, runOrExitOnConfigError, startHttpService } from '@reviews/runtime';
import { createMcpGateway } from './gateway.js';
import { SERVICE_NAME } from './metrics.js';

// mcp-gateway as it runs in a pod: configuration from the environment only, datasets from NATS
// (or DATASET_FILE when NATS_URL is unset).
const config = loadConfigOrExit(SERVICE_NAME);
const logger = createLogger(SERVICE_NAME, config.LOG_LEVEL);
const metrics = createMetrics();

// The gateway is built before the dataset source is opened, so a bad MCP_SESSION_SECRET or
// MCP_ALLOWED_ORIGINS stops the process at once, named like any other variable.
let follower: SnapshotFollower | null = null;
const handler = await runOrExitOnConfigError(SERVICE_NAME, () => createMcpGateway({ config, logger, metrics, snapshots: { current: () => follower?.current() ?? null } }));
const snapshots = await followSnapshots(await openDatasetSource(config, { logger, metrics, service: SERVICE_NAME }), { baseUrl: config.BASE_URL, logger, metrics, service: SERVICE_NAME });
follower = snapshots;

const service = await startHttpService({
  service: SERVICE_NAME,
  port: config.PORT,
  metricsPort: config.METRICS_PORT,
  shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
  logger,
  metrics,
  handler,
  readiness: () => snapshots.health(),
  handleSignals: true,
});
service.onClose(() => snapshots.close());
