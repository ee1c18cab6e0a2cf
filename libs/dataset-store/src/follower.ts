import type { Snapshot } from '@reviews/domain';
import type { SourceHealth } from './source.js';

export interface FollowerHealth {
  readonly ready: boolean;
  readonly version: string | null;
  readonly publishedAt: string | null;
  readonly source: SourceHealth;
  /** Why the latest offered dataset was refused, if it was. */
  readonly lastRejection: string | null;
}

/**
 * Turns a DatasetSource into the snapshot a service serves: validates and builds each offered
 * dataset, swaps it in atomically, keeps the old one when the new one is refused.
 */
export interface SnapshotFollower {
  current(): Snapshot | null;
  /** Called after every swap; returns an unsubscribe function. */
  onSwap(listener: (next: Snapshot, previous: Snapshot | null) => void): () => void;
  health(): FollowerHealth;
  /** Stops following the source (no more swaps, no listener called); `current()` keeps the last snapshot. */
  close(): Promise<void>;
}
