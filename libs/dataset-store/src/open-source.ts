import type { Config, Logger, Metrics } from '@reviews/runtime';
import { FileDatasetSource } from './file-source.js';
import { NatsDatasetSource } from './nats-source.js';
import type { DatasetSource } from './source.js';

export interface DatasetSourceDeps {
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** `service` label of the source's metrics (nats_connected) and the NATS connection name. */
  readonly service: string;
}

/**
 * The one place that decides where datasets come from: NATS JetStream when NATS_URL is set
 * (pods), otherwise the DATASET_FILE watcher (standalone, local development).
 */
export async function openDatasetSource(config: Pick<Config, 'NATS_URL' | 'NATS_REPLICAS' | 'DATASET_FILE'>, deps: DatasetSourceDeps): Promise<DatasetSource> {
  const { logger } = deps;
  if (config.NATS_URL === undefined) return new FileDatasetSource(config.DATASET_FILE, { logger });
  return new NatsDatasetSource({ servers: config.NATS_URL, replicas: config.NATS_REPLICAS, service: deps.service, logger, registry: deps.metrics.registry });
}
