import { natsAccessOf, type Config, type Logger, type Metrics } from '@reviews/runtime';
import { FileDatasetSource } from './file-source.js';
import { NatsDatasetSource } from './nats-source.js';
import type { DatasetSource } from './source.js';

export interface DatasetSourceDeps {
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** `service` label of the source's metrics (nats_connected) and the NATS connection name. */
  readonly service: string;
  /** `file` pins the dataset to DATASET_FILE even when NATS_URL is set (the standalone default). */
  readonly from?: 'configured' | 'file';
}

/**
 * The one place that decides where datasets come from: NATS JetStream when NATS_URL is set
 * (pods), otherwise, or when pinned to it, the DATASET_FILE watcher (standalone, local development).
 */
export async function openDatasetSource(
  config: Pick<Config, 'NATS_URL' | 'NATS_CREDS' | 'NATS_NKEY' | 'NATS_CERT' | 'NATS_KEY' | 'NATS_CA' | 'NATS_REPLICAS' | 'DATASET_FILE'>,
  deps: DatasetSourceDeps,
): Promise<DatasetSource> {
  const { logger } = deps;
  const nats = deps.from === 'file' ? undefined : natsAccessOf(config);
  if (nats === undefined) return new FileDatasetSource(config.DATASET_FILE, { logger, metrics: { registry: deps.metrics.registry, service: deps.service } });
  return new NatsDatasetSource({ nats, replicas: config.NATS_REPLICAS, service: deps.service, logger, registry: deps.metrics.registry });
}
