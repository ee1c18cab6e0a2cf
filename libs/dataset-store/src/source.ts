import { Counter, type Registry } from '@reviews/runtime';

/** One published dataset version as the store holds it: the validated input's canonical bytes. */
export interface PublishedDataset {
  /** Content hash of `bytes` (canonicalBytesVersion in libs/domain). */
  readonly version: string;
  /**
   * The bytes are a publisher's canonical serialisation (NATS), so `version` is the input's version
   * as it is and the build need not serialise the input again to find it. A file saved by hand is
   * not: its build derives the version from the parsed input, so a re-saved layout changes nothing.
   */
  readonly canonical: boolean;
  readonly publishedAt: Date;
  /** Handed over with the dataset: the consumer may move them to its build worker (they are then empty). */
  readonly bytes: Uint8Array;
  /** W3C traceparent of the publish, so a publish -> rebuild -> notification is one trace. */
  readonly traceparent: string | null;
}

/** Largest dataset either source takes. Far above any real funeral home's reviews. */
export const MAX_DATASET_BYTES = 256 * 1024 * 1024;

/** Why canonical dataset bytes of this size cannot be stored (they are over MAX_DATASET_BYTES). */
export function tooLargeProblem(bytes: number): string {
  return `dataset is ${bytes} bytes; the store accepts at most ${MAX_DATASET_BYTES}`;
}

/**
 * dataset_load_failures_total, which the follower registers before a source subscribes: a source
 * counts there what it refuses itself, before any build. Null in a registry without it.
 */
export function datasetLoadFailures(registry: Registry): Counter<'service' | 'reason'> | null {
  const failures = registry.getSingleMetric('dataset_load_failures_total');
  return failures instanceof Counter ? (failures as Counter<'service' | 'reason'>) : null;
}

export interface SourceHealth {
  /** False while the backing store (NATS) is unreachable; the last snapshot keeps being served. */
  readonly connected: boolean;
  readonly detail: string;
  /** The last version the source refused itself, before any build (NATS: a pointer or object failing its checks). */
  readonly lastRefusal?: SourceRefusal;
}

export interface SourceRefusal {
  /** `performance.now()` when refused, to order it against what the follower accepted or refused. */
  readonly at: number;
  readonly summary: string;
}

/**
 * What the consumer made of a delivered dataset: `refused` when it could not build it. A source that
 * has nothing served yet may then offer an earlier version; no answer counts as served.
 */
export type DatasetOutcome = 'served' | 'refused';

export type OnDataset = (dataset: PublishedDataset) => Promise<DatasetOutcome | void> | DatasetOutcome | void;

/**
 * "Give me the current dataset and tell me when it changes." Implemented by the embedded file
 * watcher (standalone) and by NATS JetStream (pods); one contract test suite runs against both.
 */
export interface DatasetSource {
  /**
   * Deliver the current dataset, if any, then every later change, in order, until `close()`; of the
   * changes made while the consumer was busy with a delivery, only the newest. Resolves once the
   * current dataset (or its absence) has been delivered.
   */
  subscribe(onDataset: OnDataset): Promise<void>;
  health(): SourceHealth;
  close(): Promise<void>;
}
