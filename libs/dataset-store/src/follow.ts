import { performance } from 'node:perf_hooks';
import { setImmediate as yieldToRequests } from 'node:timers/promises';
import { assembleSnapshot, formatIssuePath, keepUnchangedRepresentations, lastModifiedAfter, latestLastModifiedMs, withLateBrotli, type Snapshot } from '@reviews/domain';
import { Counter, Gauge, Histogram, registeredOnce, withSpan, type Logger, type Metrics } from '@reviews/runtime';
import type { FollowerHealth, SnapshotFollower } from './follower.js';
import type { DatasetOutcome, DatasetSource, PublishedDataset, SourceRefusal } from './source.js';
import { BUILD_REFUSAL_REASONS, buildError, type Rejection } from './follow-build.js';
import { createContentBuilder, type LateBrotli } from './follow-offthread.js';

/** Issues of a refused version logged one per line; the summary line after them counts them all. */
const MAX_LOGGED_ISSUES = 100;

export interface FollowOptions {
  /** Public base URL the snapshot's absolute URLs are built from. */
  readonly baseUrl: string;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** `service` label of the dataset metrics. */
  readonly service: string;
  /**
   * No document is dated before it: by default when this process started following, as a new process
   * may render other bytes for the same dataset than the one before it (a new release, another
   * BASE_URL). Tests of dating give an earlier one.
   */
  readonly servingSince?: Date;
}

interface DatasetMetrics {
  readonly info: Gauge<'service' | 'version'>;
  readonly publishedTimestamp: Gauge<'service'>;
  readonly buildDuration: Histogram<'service'>;
  readonly propagation: Histogram<'service'>;
  readonly loadFailures: Counter<'service' | 'reason'>;
}

function datasetMetrics({ registry }: Metrics): DatasetMetrics {
  const registers = [registry];
  return {
    info: registeredOnce(registry, 'dataset_info', () => new Gauge({ name: 'dataset_info', help: 'The dataset version being served (value 1).', labelNames: ['service', 'version'] as const, registers })),
    publishedTimestamp: registeredOnce(
      registry,
      'dataset_published_timestamp_seconds',
      () => new Gauge({ name: 'dataset_published_timestamp_seconds', help: 'Publish time of the dataset being served.', labelNames: ['service'] as const, registers }),
    ),
    buildDuration: registeredOnce(
      registry,
      'dataset_snapshot_build_duration_seconds',
      () =>
        new Histogram({
          name: 'dataset_snapshot_build_duration_seconds',
          help: 'Time to validate a dataset and build its snapshot (derivation, representations, indexes).',
          labelNames: ['service'] as const,
          buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
          registers,
        }),
    ),
    propagation: registeredOnce(
      registry,
      'dataset_propagation_seconds',
      () =>
        new Histogram({
          name: 'dataset_propagation_seconds',
          help: 'Time from a dataset being published to this process serving it.',
          labelNames: ['service'] as const,
          buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
          registers,
        }),
    ),
    loadFailures: registeredOnce(
      registry,
      'dataset_load_failures_total',
      () =>
        new Counter({
          name: 'dataset_load_failures_total',
          help: 'Datasets refused, by reason: invalid_json, invalid_dataset, build_error; from NATS also invalid_pointer, missing_object, corrupt_object, digest_mismatch; from DATASET_FILE also not_regular_file, too_large, unreadable.',
          labelNames: ['service', 'reason'] as const,
          registers,
        }),
    ),
  };
}

export interface FollowingSnapshots {
  /** Serves nothing (`current()` is null) until the first dataset is built. */
  readonly snapshots: SnapshotFollower;
  /** Settles once the source's current dataset, if it has one, was built and swapped in, or refused. */
  readonly firstLoad: Promise<void>;
}

/**
 * Serves the newest valid dataset a source offers: each offer is parsed, validated, derived, rendered
 * and compressed on a worker thread while requests keep being answered from the current snapshot
 * (ADR 0007), then swapped in with one assignment, so a request sees the old snapshot or the new
 * one, never a mix. A refused offer changes nothing but the rejection reported by /readyz.
 *
 * Returns at once, the first dataset still loading: a pod listens meanwhile, so its probes answer
 * during a load that takes minutes on a starved CPU.
 */
export function startFollowingSnapshots(source: DatasetSource, options: FollowOptions): FollowingSnapshots {
  const { logger, service } = options;
  const metrics = datasetMetrics(options.metrics);
  // From the start at 0, so an alert on their increase sees a pod's first refusal, and the propagation
  // panel a pod's first publish (the observability audit saw each pod's first one missing).
  for (const reason of BUILD_REFUSAL_REASONS) metrics.loadFailures.inc({ service, reason }, 0);
  metrics.propagation.zero({ service });
  const followingSince = Date.now();
  const servingSince = options.servingSince?.getTime() ?? followingSince;
  let current: Snapshot | null = null;
  /** The follower's own last refusal (a build's), and when the last offered version was accepted. */
  let lastRejection: SourceRefusal | null = null;
  let lastAcceptedAt = -Infinity;
  let closed = false;
  const listeners = new Set<(next: Snapshot, previous: Snapshot | null) => void>();

  const builder = createContentBuilder();
  /**
   * The heavy part runs on the build worker; only the search indexes are built on this thread. While
   * a snapshot is served, the new one is swapped in before its new bodies' brotli variants are made
   * (`lateBrotli`; ADR 0007): a client accepting br gets gzip meanwhile.
   *
   * Last-Modified is per document: a document whose bytes the new version leaves unchanged stays the
   * served representation (date, variants and all), the changed ones are dated after every date served,
   * and none before this process began (`servingSince`): the review of 6e07f22 showed a release that
   * renders differently dating its new bytes as the old release dated the old ones, so If-Modified-Since
   * answered 304 to clients holding the old bytes.
   */
  const build = async (dataset: PublishedDataset): Promise<{ ok: true; snapshot: Snapshot; lateBrotli: LateBrotli | null } | { ok: false; rejection: Rejection }> => {
    const stamped = new Date(Math.max(dataset.publishedAt.getTime(), servingSince));
    const lastModified = lastModifiedAfter(stamped, current ? latestLastModifiedMs(current.representations) : null, Date.now());
    const outcome = await builder.build(
      { bytes: dataset.bytes, ...(dataset.canonical ? { version: dataset.version } : {}), baseUrl: options.baseUrl, publishedAt: dataset.publishedAt, lastModified, deferBrotli: current !== null },
      current,
    );
    if (!outcome.ok) return outcome;
    // Receiving the content (deserializing it) was one task; let requests that arrived meanwhile run
    // before the next: the first immediate runs before the next poll for I/O, the second after it.
    await yieldToRequests();
    await yieldToRequests();
    try {
      // Against the snapshot served now (the previous version's late brotli, if any, already joined
      // it): the snapshot returned is the one swapped in and completed by addLateBrotli.
      const representations = keepUnchangedRepresentations(outcome.content.representations, current?.representations ?? null);
      return { ok: true, snapshot: assembleSnapshot({ ...outcome.content, representations }), lateBrotli: outcome.lateBrotli ?? null };
    } catch (error) {
      return buildError(error);
    }
  };

  /** The same version again, with its brotli variants, unless another version was swapped in since. */
  const addLateBrotli = async (snapshot: Snapshot, lateBrotli: LateBrotli) => {
    const bodies = await lateBrotli;
    if (closed || current !== snapshot) return;
    if (bodies === null) {
      logger.warn({ datasetVersion: snapshot.version }, 'the build worker ended before the brotli variants; serving identity and gzip until the next version');
      return;
    }
    current = withLateBrotli(snapshot, bodies);
  };

  const offer = async (dataset: PublishedDataset): Promise<DatasetOutcome> => {
    if (closed) return 'refused';
    const stopTimer = metrics.buildDuration.startTimer({ service });
    const started = performance.now();
    const result = await withSpan('dataset build', { attributes: { 'dataset.version': dataset.version } }, () => build(dataset));
    stopTimer();
    if (closed) return 'refused';
    if (!result.ok) {
      const { rejection } = result;
      metrics.loadFailures.inc({ service, reason: rejection.reason });
      lastRejection = { at: performance.now(), summary: `dataset ${dataset.version} refused (${rejection.reason}): ${rejection.summary}` };
      // The count goes in the line after: a dataset wrong in every review would log a line per review and replica.
      for (const issue of rejection.issues.slice(0, MAX_LOGGED_ISSUES)) logger.error({ datasetVersion: dataset.version, path: formatIssuePath(issue.path), code: issue.code }, issue.message);
      logger.error({ datasetVersion: dataset.version, reason: rejection.reason, issueCount: rejection.issues.length, serving: current?.version ?? null }, 'dataset refused; keeping the current snapshot');
      return 'refused';
    }
    lastAcceptedAt = performance.now();
    const next = result.snapshot;
    const previous = current;
    // Same content re-offered (a reconnect, a re-saved file): nothing changes, nobody is notified.
    if (previous?.version === next.version) return 'served';
    current = next;
    if (previous) metrics.info.remove({ service, version: previous.version });
    metrics.info.set({ service, version: next.version }, 1);
    metrics.publishedTimestamp.set({ service }, next.publishedAt.getTime() / 1000);
    // Only a version published while this process follows is propagation: a first load at start
    // measures the dataset's age, and every rollout would push the histogram into its +Inf bucket.
    if (previous || next.publishedAt.getTime() >= followingSince) metrics.propagation.observe({ service }, Math.max(0, (Date.now() - next.publishedAt.getTime()) / 1000));
    logger.info({ datasetVersion: next.version, publishedAt: next.publishedAt.toISOString(), buildMs: Math.round(performance.now() - started), previous: previous?.version ?? null }, 'dataset snapshot swapped in');
    if (result.lateBrotli) void addLateBrotli(next, result.lateBrotli);
    for (const listener of listeners) {
      try {
        listener(next, previous);
      } catch (error) {
        logger.error({ err: error }, 'snapshot listener failed');
      }
    }
    return 'served';
  };

  const firstLoad = source.subscribe(offer);

  const snapshots: SnapshotFollower = {
    current: () => current,
    onSwap(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    health(): FollowerHealth {
      const sourceHealth = source.health();
      // The newest refusal, the source's (NATS integrity checks) or a build's, unless a version was accepted since.
      const refusals = [lastRejection, sourceHealth.lastRefusal ?? null].filter((refusal): refusal is SourceRefusal => refusal !== null && refusal.at > lastAcceptedAt);
      const newest = refusals.sort((a, b) => b.at - a.at)[0];
      return {
        ready: current !== null,
        version: current?.version ?? null,
        publishedAt: current?.publishedAt.toISOString() ?? null,
        source: sourceHealth,
        lastRejection: newest?.summary ?? null,
      };
    },
    async close() {
      closed = true;
      listeners.clear();
      // Together, not in turn: the source waits for the dataset it is handing over, and that hand-over
      // may be a build in the worker, which closing the builder ends (the offer then sees `closed`).
      await Promise.all([source.close(), builder.close()]);
    },
  };
  return { snapshots, firstLoad };
}

/** startFollowingSnapshots, resolved once the first load is done: what a caller that cannot serve without it awaits. */
export async function followSnapshots(source: DatasetSource, options: FollowOptions): Promise<SnapshotFollower> {
  const { snapshots, firstLoad } = startFollowingSnapshots(source, options);
  await firstLoad;
  return snapshots;
}
