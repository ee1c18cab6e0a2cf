import { createLogger, createMetrics, loadConfigOrExit, requireBaseUrlWithNats, runOrExitOnConfigError, startHttpService, type Config, type HttpService, type Logger, type Metrics, type Readiness, type RequestHandler } from '@reviews/runtime';
import type { SnapshotFollower } from './follower.js';
import { startFollowingSnapshots } from './follow.js';
import { openDatasetSource } from './open-source.js';

export interface PodContext {
  readonly config: Config;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly snapshots: SnapshotFollower;
}

export interface PodApp {
  readonly handler: RequestHandler;
  /** What `OPTIONS *` lists, when the app takes more than the read methods (a POST endpoint). */
  readonly allow?: string;
  /**
   * Runs on shutdown once the in-flight requests are done. The dataset source was already closed when
   * shutdown began (the last snapshot stays current), so no dataset change starts new work meanwhile.
   */
  readonly close?: () => Promise<void> | void;
  /** Runs the moment shutdown begins: start no new background work (a hub's delivery jobs) while requests drain. */
  readonly stopTakingWork?: () => void;
  /** What /readyz reports, from the dataset's readiness: an app with state of its own to open adds its conditions. */
  readonly readiness?: (dataset: Readiness) => Readiness;
}

export interface PodOptions {
  /** Where datasets come from (openDatasetSource's `from`). */
  readonly datasetSource?: 'configured' | 'file';
  /** Replaces the process registry (the overhead benchmark measures the service without metrics). */
  readonly metrics?: Metrics;
}

/**
 * Runs one service as a pod runs it: configuration from the environment only, the current dataset
 * followed from NATS (or DATASET_FILE without NATS_URL), probes, /metrics and graceful shutdown.
 * Resolves once it listens, which is before the first dataset is served.
 * A ConfigError raised while building the app ends the process naming the variable.
 */
export async function runPod(service: string, build: (context: PodContext) => Promise<PodApp> | PodApp, options: PodOptions = {}): Promise<HttpService> {
  const config = loadConfigOrExit(service);
  if (options.datasetSource !== 'file') await runOrExitOnConfigError(service, () => requireBaseUrlWithNats());
  const logger = createLogger(service, config.LOG_LEVEL);
  const metrics = options.metrics ?? createMetrics(service);
  const source = await openDatasetSource(config, { logger, metrics, service, from: options.datasetSource ?? 'configured' });
  // Not awaited: the pod listens while its first dataset loads (8 s and 9 CPU-seconds at 100,000
  // reviews), so /healthz answers the startup probe, and /readyz (503) and the data endpoints (503 with
  // Retry-After) say it is not ready yet, instead of refusing connections.
  const { snapshots, firstLoad } = startFollowingSnapshots(source, { baseUrl: config.BASE_URL, logger, metrics, service });
  firstLoad.catch((error: unknown) => {
    // A source fails its subscription only on a fault of its own (never for an unreachable NATS or a bad file).
    logger.fatal({ err: error }, 'cannot follow the dataset; exiting');
    process.exit(1);
  });
  const app = await runOrExitOnConfigError(service, () => build({ config, logger, metrics, snapshots }));
  const http = await runOrExitOnConfigError(service, () => startHttpService({
    service,
    port: config.PORT,
    metricsPort: config.METRICS_PORT,
    ...(config.HOST === undefined ? {} : { host: config.HOST }),
    shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
    logger,
    metrics,
    handler: app.handler,
    ...(app.allow === undefined ? {} : { allow: app.allow }),
    readiness: app.readiness === undefined ? () => snapshots.health() : () => app.readiness!(snapshots.health()),
    handleSignals: true,
  }));
  // Dataset changes are new work (a WebSub fan-out above all): stop following them the moment shutdown
  // begins, so a change published during the drain is left to the next instance instead of being
  // announced by both. The app keeps the last snapshot for what it still has in flight.
  http.onStopAcceptingWork(() => snapshots.close());
  if (app.stopTakingWork) http.onStopAcceptingWork(app.stopTakingWork);
  if (app.close) http.onClose(app.close);
  return http;
}
