/** One published dataset version as the store holds it: the validated input's canonical bytes. */
export interface PublishedDataset {
  /** Content hash of the canonical input bytes (see datasetVersion in libs/domain). */
  readonly version: string;
  readonly publishedAt: Date;
  /** Handed over with the dataset: the consumer may move them to its build worker (they are then empty). */
  readonly bytes: Uint8Array;
  /** W3C traceparent of the publish, so a publish -> rebuild -> notification is one trace. */
  readonly traceparent: string | null;
}

export interface SourceHealth {
  /** False while the backing store (NATS) is unreachable; the last snapshot keeps being served. */
  readonly connected: boolean;
  readonly detail: string;
}

/**
 * "Give me the current dataset and tell me when it changes." Implemented by the embedded file
 * watcher (standalone) and by NATS JetStream (pods); one contract test suite runs against both.
 */
export interface DatasetSource {
  /**
   * Deliver the current dataset, if any, then every later change, in order, until `close()`.
   * Resolves once the current dataset (or its absence) has been delivered.
   */
  subscribe(onDataset: (dataset: PublishedDataset) => Promise<void> | void): Promise<void>;
  health(): SourceHealth;
  close(): Promise<void>;
}
