/**
 * The read API composed as services/read-api/src/main.ts does, for the `overhead` suite. Metrics are
 * always on in the service; BENCH_METRICS=off is the only way to take them out: an empty registry
 * (no default collectors) and a request histogram that records nothing. Tracing is on or off through
 * the instrumentation preload and OTEL_* variables, exactly as in a pod.
 */
import { followSnapshots, openDatasetSource } from '@reviews/dataset-store';
import { createLogger, createMetrics, loadConfigOrExit, Registry, startHttpService, type Metrics } from '@reviews/runtime';
import { createReadApi, SERVICE } from '@reviews/read-api';

function withoutMetrics(): Metrics {
  const nothing = { observe: () => undefined };
  return { registry: new Registry(), httpDuration: { labels: () => nothing } as unknown as Metrics['httpDuration'] };
}

const config = loadConfigOrExit(SERVICE);
const logger = createLogger(SERVICE, config.LOG_LEVEL);
const metrics = process.env.BENCH_METRICS === 'off' ? withoutMetrics() : createMetrics();
const snapshots = await followSnapshots(await openDatasetSource(config, { logger, metrics, service: SERVICE }), { baseUrl: config.BASE_URL, logger, metrics, service: SERVICE });
await startHttpService({
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
