import type { Config, Logger } from '@reviews/runtime';
import { FileDatasetSource } from './file-source.js';
import type { DatasetSource } from './source.js';

/**
 * The one place that decides where datasets come from: NATS JetStream when NATS_URL is set
 * (pods), otherwise the DATASET_FILE watcher (standalone, local development).
 */
export async function openDatasetSource(config: Pick<Config, 'NATS_URL' | 'DATASET_FILE'>, logger: Logger): Promise<DatasetSource> {
  if (config.NATS_URL === undefined) return new FileDatasetSource(config.DATASET_FILE, { logger });
  throw new Error('NATS_URL is set but the NATS dataset source is not available in this build');
}
