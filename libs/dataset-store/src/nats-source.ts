import { performance } from 'node:perf_hooks';
import type { KvEntry, KvWatchEntry } from '@nats-io/kv';
import type { NatsConnection, QueuedIterator, Status } from '@nats-io/transport-node';
import { contextFromTraceparent, displayedServers, Gauge, registeredOnce, SpanKind, withSpan, type Logger, type NatsAccess, type Registry, wakeablePause } from '@reviews/runtime';
import { versionOfSha256 } from '@reviews/domain';
import { connectServiceNats } from './nats-connect.js';
import { openDatasetBuckets, type DatasetBuckets } from './nats-store.js';
import { DATASET_OBJECT_BUCKET, earlierPointers, POINTER_BUCKET, POINTER_KEY, readPointer, type DatasetPointer } from './nats-layout.js';
import { readDatasetObject } from './nats-object-read.js';
import { datasetLoadFailures, type DatasetSource, type OnDataset, type PublishedDataset, type SourceHealth, type SourceRefusal } from './source.js';

/** Why an offered dataset was refused; the `reason` label of dataset_load_failures_total. */
const NATS_REFUSAL_REASONS = ['invalid_pointer', 'missing_object', 'corrupt_object', 'digest_mismatch'] as const;
export type NatsRefusalReason = (typeof NATS_REFUSAL_REASONS)[number];

export interface NatsDatasetSourceOptions {
  /** NATS_URL and the credential and TLS files. */
  readonly nats: NatsAccess;
  /** NATS_REPLICAS: replicas of the buckets, if this process is the one that creates them. */
  readonly replicas: number;
  /** The `service` label on metrics and the NATS connection name. */
  readonly service: string;
  readonly logger: Logger;
  readonly registry: Registry;
}

/** The pause between first connection attempts while NATS is down, and between failed watches. */
const RETRY_DELAY_MS = 1_000;
/** While the watch keeps failing, one warning per this many attempts (about a minute). */
const WATCH_WARN_EVERY = 60;
/**
 * How often the pointer is read beside the watch. A watch outlives its bucket: deleted by hand and
 * made again by the next publish, the bucket's revisions restart at 1 while the watch resumes after
 * the old bucket's last sequence, so it shows nothing until the new bucket passes it. Two reads in a
 * row that find the same pointer, not the one the watch last gave, restart the watch: one read alone
 * may just have seen a move the watch is about to give.
 */
const POINTER_CHECK_MS = 5_000;

/**
 * An object read that has not finished by then is given up and retried like any NATS trouble: a server
 * answering each step of the read just within its timeout would otherwise hold every later pointer
 * move, and start-up, for as long as the object has chunks.
 */
const FETCH_STALL_MS = 30_000;

type Deferred = { promise: Promise<void>; resolve: () => void };

/** A lost connection: the server it was lost from, attempts to reconnect, and why the server refused the last it refused (`Authorization Violation`). */
interface Outage {
  readonly server: string;
  attempts: number;
  refusal: string | null;
}

/**
 * Follows `dataset-pointer/current` (docs/adr/0002-nats-dataset-store.md): delivers the current
 * dataset at start, then every pointer move, in order. Integrity failures are refused with a log
 * line and a metric, and the previous dataset stays. NATS being down, at start or later, never
 * crashes anything: the source keeps retrying and `health()` says disconnected.
 */
export class NatsDatasetSource implements DatasetSource {
  private nc: NatsConnection | null = null;
  private watcher: QueuedIterator<KvWatchEntry> | null = null;
  private closed = false;
  private connected = false;
  private detail = 'not started';
  /** Since the connection was lost, null while connected. */
  private outage: Outage | null = null;
  /** Whether the pointer was read and found empty: nothing was ever published to this NATS. */
  private nothingPublished = false;
  private lastRefusal: SourceRefusal | null = null;
  /** The pointer revision last handled (delivered or refused), and what it held (isNews). */
  private handledRevision = 0;
  private handledPointer: string | null = null;
  /** The pointer entry that arrived last: the current one, which any entry queued before it is not. */
  private latestEntry: KvEntry | null = null;
  private deliveredVersion: string | null = null;
  /** Whether the consumer has served any version this source offered: until then a refused pointer sends it back in history. */
  private served = false;
  private queue: Promise<void> = Promise.resolve();
  /** The wait between attempts, which close() cuts short. */
  private readonly retryWait = wakeablePause();
  private running: Promise<void> | null = null;
  /** Aborted by close(): cuts short an object read in progress. */
  private readonly closing = new AbortController();
  private readonly connectedGauge: Gauge<'service'>;

  constructor(private readonly options: NatsDatasetSourceOptions) {
    this.connectedGauge = registeredOnce(options.registry, 'nats_connected', () =>
      new Gauge({ name: 'nats_connected', help: '1 while the NATS connection is up, else 0.', labelNames: ['service'] as const, registers: [options.registry] }),
    );
    this.connectedGauge.set({ service: options.service }, 0);
  }

  subscribe(onDataset: OnDataset): Promise<void> {
    if (this.running) throw new Error('NatsDatasetSource.subscribe() may be called once');
    // Its series start at 0, so that an alert on their increase sees a pod's first refusal.
    for (const reason of NATS_REFUSAL_REASONS) datasetLoadFailures(this.options.registry)?.inc({ service: this.options.service, reason }, 0);
    const initial = deferred();
    this.running = this.run(onDataset, initial);
    return initial.promise;
  }

  health(): SourceHealth {
    // A pod with no dataset says why, as the runbook of ReviewsNoDataset has the on-call read it.
    const detail = this.connected && this.nothingPublished ? `${this.detail}; no dataset has been published to it yet (npm run dataset:publish, or the chart's seed Job)` : this.detail;
    return { connected: this.connected, detail, ...(this.lastRefusal ? { lastRefusal: this.lastRefusal } : {}) };
  }

  async close(): Promise<void> {
    this.closed = true;
    this.closing.abort(new Error('the source was closed'));
    this.retryWait.wake();
    this.watcher?.stop();
    await this.nc?.close().catch(() => undefined);
    await this.running;
    await this.queue;
    this.setConnected(false, 'closed');
  }

  /** Connect (retrying forever), then keep a pointer watch alive until close(). */
  private async run(onDataset: OnDataset, initial: Deferred): Promise<void> {
    const nc = await this.connectUntilClosed(initial);
    if (nc === null) return initial.resolve();
    this.nc = nc;
    void this.followStatus(nc);
    let failures = 0;
    while (!this.closed) {
      try {
        const buckets = await openDatasetBuckets(nc, this.options.replicas);
        if (failures > 0) {
          failures = 0;
          this.setConnected(true, `connected to ${nc.getServer()}`);
          this.options.logger.info('NATS dataset watch restored');
        }
        // Read the pointer first: subscribe() resolves once the current dataset (or its absence) is handled.
        const entry = await buckets.pointers.get(POINTER_KEY);
        this.nothingPublished = entry === null;
        if (entry === null) this.latestEntry = null;
        else await this.enqueue(buckets, entry, onDataset);
        initial.resolve();
        // The watch replays the latest value, then follows moves; the pointer already handled is skipped.
        const watcher = await buckets.pointers.watch({ key: POINTER_KEY });
        this.watcher = watcher;
        if (this.closed) watcher.stop();
        const stopChecking = this.checkBesideWatch(buckets, watcher);
        try {
          for await (const next of watcher) void this.enqueue(buckets, next, onDataset);
        } finally {
          stopChecking();
        }
      } catch (error) {
        if (this.closed) break;
        failures++;
        // Connected, yet no dataset can come (JetStream off or still recovering, the account without it):
        // /readyz says why, and the log says so once a minute rather than with a stack every second.
        if (this.connected) this.detail = `connected to ${nc.getServer()}, but cannot follow the dataset pointer (attempt ${failures}): ${(error as Error).message}`;
        if (failures % WATCH_WARN_EVERY === 1) this.options.logger.warn({ err: error, attempt: failures }, 'NATS dataset watch failed; retrying');
        // E.g. JetStream still recovering: don't hold the service's start-up hostage to it.
        initial.resolve();
      }
      // The watch ends on close and when a reconnect restarts it (see followStatus).
      if (!this.closed) await this.retryWait.pause(RETRY_DELAY_MS);
    }
    initial.resolve();
  }

  private async connectUntilClosed(initial: Deferred): Promise<NatsConnection | null> {
    for (let attempt = 1; !this.closed; attempt++) {
      try {
        const nc = await connectServiceNats(this.options.nats, this.options.service);
        if (this.closed) {
          await nc.close();
          return null;
        }
        this.setConnected(true, `connected to ${nc.getServer()}`);
        return nc;
      } catch (error) {
        this.setConnected(false, `cannot reach NATS at ${displayedServers(this.options.nats)} (attempt ${attempt}): ${(error as Error).message}`);
        if (attempt === 1) {
          this.options.logger.warn({ servers: displayedServers(this.options.nats), err: error }, 'NATS unreachable at start; serving nothing new until it is back, retrying');
          // Nothing can be delivered yet; let the caller go on (readiness stays false until a dataset arrives).
          initial.resolve();
        }
        await this.retryWait.pause(RETRY_DELAY_MS);
      }
    }
    return null;
  }

  /**
   * Reads the pointer every POINTER_CHECK_MS beside `watcher`, and stops the watcher (run's loop then
   * starts another) when two reads in a row find the same pointer it did not give. Returns how to stop.
   */
  private checkBesideWatch(buckets: DatasetBuckets, watcher: QueuedIterator<KvWatchEntry>): () => void {
    let ended = false;
    let unseen: string | null = null;
    const check = setInterval(() => {
      void this.pointerBesideWatch(buckets).then((found) => {
        if (ended || found === undefined) return;
        if (found === null || found !== unseen) {
          unseen = found;
          return;
        }
        this.options.logger.warn('the dataset pointer watch missed a move (its bucket deleted and made anew?); restarting it');
        watcher.stop();
      });
    }, POINTER_CHECK_MS);
    return () => {
      ended = true;
      clearInterval(check);
    };
  }

  /**
   * The pointer as a read finds it, when it is not the one the watch gave last (pointerIdentity);
   * null when it is; undefined when the read failed (NATS away: the reconnect restarts the watch).
   */
  private async pointerBesideWatch(buckets: DatasetBuckets): Promise<string | null | undefined> {
    const entry = await buckets.pointers.get(POINTER_KEY).catch(() => undefined);
    if (entry === undefined || this.closed) return undefined;
    const found = pointerIdentity(entry);
    return found === pointerIdentity(this.latestEntry) ? null : found;
  }

  /**
   * Track the connection; after a reconnect restart the watch so a move made while away is picked up.
   * An attempt to reconnect that the server refuses (credentials changed or revoked) comes as an error,
   * then a disconnect, every second: /readyz names the refusal and counts the attempts, and the log says
   * the loss once and each new refusal once (an on-call drill read 34 bare "NATS disconnected" lines
   * and no reason).
   */
  private async followStatus(nc: NatsConnection): Promise<void> {
    for await (const status of nc.status()) {
      // Each refused attempt starts another reconnect loop in nats.js, and each reports its reconnect: the first ends the outage.
      if (status.type === 'reconnect') {
        if (this.outage === null) continue;
        this.outage = null;
        this.setConnected(true, `connected to ${status.server}`);
        this.options.logger.info({ server: status.server }, 'NATS reconnected; re-reading the dataset pointer');
        this.watcher?.stop();
      } else if (status.type === 'disconnect' && this.outage === null) {
        this.outage = { server: status.server, attempts: 0, refusal: null };
        this.options.logger.warn({ server: status.server }, 'NATS disconnected');
        this.showOutage(this.outage);
      } else if (this.outage !== null && this.outageChangedBy(status, this.outage)) {
        this.showOutage(this.outage);
      }
    }
  }

  private outageChangedBy(status: Status, outage: Outage): boolean {
    if (status.type === 'reconnecting') {
      outage.attempts++;
      return true;
    }
    if (status.type !== 'error' || status.error.message === outage.refusal) return false;
    outage.refusal = status.error.message;
    this.options.logger.warn({ err: status.error, attempt: outage.attempts }, 'NATS refused to reconnect; retrying');
    return true;
  }

  private showOutage({ server, attempts, refusal }: Outage): void {
    const tried = attempts === 0 ? '' : ` (attempt ${attempts}${refusal === null ? '' : `, the last refused: ${refusal}`})`;
    this.setConnected(false, `disconnected from ${server}; reconnecting${tried}, serving the last dataset`);
  }

  /**
   * Handle pointer entries one at a time, in arrival order, so deliveries never overtake each other.
   * An entry that another arrived after while it waited (a replica busy building, frozen, or behind a
   * quick run of publishes) is skipped: its version is no longer current, building it is wasted, and
   * its object may already be pruned, which would read as a refusal of a valid publish.
   */
  private enqueue(buckets: DatasetBuckets, entry: KvEntry, onDataset: OnDataset): Promise<void> {
    this.latestEntry = entry;
    this.nothingPublished = false;
    this.queue = this.queue
      .then(() => this.handle(buckets, entry, onDataset))
      .catch((error: unknown) => this.options.logger.error({ err: error }, 'unexpected failure handling a dataset pointer'));
    return this.queue;
  }

  /**
   * Revisions only grow within one bucket, so a pointer is news unless it is the revision last handled
   * with the same content (the watch's replay of it). A lower revision, or the same one holding another
   * pointer, means the bucket was made anew (NATS lost its store, an operator deleted it), its
   * revisions starting again at 1: a watch follows the new bucket without a reconnect, and every
   * later publish would otherwise be skipped as handled, silently, while new pods served it.
   * (Compared by content: the client reads an entry's time to different milliseconds from a watch
   * and from a get.)
   */
  private isNews(entry: KvEntry): boolean {
    return entry.revision !== this.handledRevision || entry.string() !== this.handledPointer;
  }

  private async handle(buckets: DatasetBuckets, entry: KvEntry, onDataset: OnDataset): Promise<void> {
    if (this.closed || entry !== this.latestEntry || !this.isNews(entry)) return;
    this.handledRevision = entry.revision;
    this.handledPointer = entry.string();
    const outcome = await this.offer(buckets, entry, onDataset);
    if (outcome === 'retry') return this.offerAgain(entry.revision);
    if (outcome === 'refused' && !this.served) await this.offerEarlier(buckets, entry.revision, onDataset);
  }

  /**
   * NATS trouble mid-fetch (timeout, disconnect, a stalled read): forget this revision and restart
   * the watch, whose replay of the latest pointer offers it again.
   */
  private offerAgain(revision: number): void {
    this.handledRevision = revision - 1;
    this.watcher?.stop();
  }

  /**
   * A replica that starts while the current pointer is refused (a pointer written past the publish
   * CLI, an object gone) would serve nothing until the next publish, and a rollout then takes the
   * service down: it serves the newest earlier version that passes instead, as the replicas running
   * before it still do. `/readyz` keeps reporting the refusal.
   */
  private async offerEarlier(buckets: DatasetBuckets, refusedRevision: number, onDataset: OnDataset): Promise<void> {
    // /readyz names the current pointer's refusal, not the last of the earlier ones tried.
    const currentRefusal = this.lastRefusal;
    for (const entry of await earlierPointers(buckets.pointers, refusedRevision)) {
      if (this.closed || this.handledRevision !== refusedRevision) return;
      const outcome = await this.offer(buckets, entry, onDataset);
      // The walk back starts again with the current pointer.
      if (outcome === 'retry') return this.offerAgain(refusedRevision);
      if (outcome === 'served') {
        const summary = `the current dataset pointer (revision ${refusedRevision}) is refused; serving the newest earlier version that passes, ${this.deliveredVersion} (revision ${entry.revision})`;
        this.options.logger.warn({ revision: entry.revision, version: this.deliveredVersion, refusedRevision }, summary);
        // Dated after the acceptance, so /readyz goes on saying the pod serves less than the pointer names.
        this.lastRefusal = { at: performance.now(), summary };
        return;
      }
    }
    // A refusal by the consumer (the build) is not the source's: then the source reports none.
    if (!this.served) this.lastRefusal = currentRefusal && { at: performance.now(), summary: currentRefusal.summary };
  }

  /** Fetch, check and hand over the version one pointer entry names. */
  private async offer(buckets: DatasetBuckets, entry: KvEntry, onDataset: OnDataset): Promise<'served' | 'refused' | 'retry'> {
    const read = readPointer(entry);
    if (!read.ok) return this.refuse('invalid_pointer', read.problem, { revision: entry.revision });
    const pointer = read.pointer;
    if (pointer.version === this.deliveredVersion) {
      // The pointer names again what is served (a fallback's repair): nothing is refused any more.
      if (this.served) this.lastRefusal = null;
      return this.served ? 'served' : 'refused';
    }
    let dataset: PublishedDataset;
    try {
      const fetched = await this.fetchVerified(buckets, pointer);
      if (!fetched.ok) return this.refuse(fetched.reason, fetched.problem, { revision: entry.revision, version: pointer.version, object: pointer.object });
      dataset = {
        version: pointer.version,
        publishedAt: new Date(pointer.published_at),
        bytes: fetched.bytes,
        canonical: true,
        traceparent: pointer.traceparent,
      };
    } catch (error) {
      if (this.closed) return 'refused';
      this.options.logger.warn({ err: error, version: pointer.version }, 'could not fetch the published dataset; retrying');
      return 'retry';
    }
    this.deliveredVersion = pointer.version;
    this.options.logger.info({ version: pointer.version, revision: entry.revision, size: pointer.size, traceparent: pointer.traceparent }, 'dataset version offered by NATS');
    try {
      // The rebuild joins the publish's trace: publish -> swap -> notifications is one trace.
      const span = { kind: SpanKind.CONSUMER, parent: contextFromTraceparent(pointer.traceparent), attributes: { 'messaging.system': 'nats', 'messaging.destination.name': `${POINTER_BUCKET}.${POINTER_KEY}`, 'dataset.version': pointer.version } };
      const outcome = (await withSpan('dataset receive', span, () => onDataset(dataset))) ?? 'served';
      if (outcome === 'served') this.served = true;
      return outcome;
    } catch (error) {
      this.options.logger.error({ err: error, version: pointer.version }, 'dataset consumer failed');
      return 'refused';
    }
  }

  private async fetchVerified(
    buckets: DatasetBuckets,
    pointer: DatasetPointer,
  ): Promise<{ ok: true; bytes: Uint8Array } | { ok: false; reason: NatsRefusalReason; problem: string }> {
    const read = await readDatasetObject(buckets.js, pointer.object, AbortSignal.any([this.closing.signal, AbortSignal.timeout(FETCH_STALL_MS)]));
    if (read.status === 'missing') return { ok: false, reason: 'missing_object', problem: `pointer names ${DATASET_OBJECT_BUCKET}/${pointer.object}, which does not exist` };
    if (read.status === 'corrupt') return { ok: false, reason: 'corrupt_object', problem: `object ${DATASET_OBJECT_BUCKET}/${pointer.object} is corrupt: ${read.problem}` };
    const { bytes, sha256 } = read;
    if (bytes.length !== pointer.size) {
      return { ok: false, reason: 'digest_mismatch', problem: `object is ${bytes.length} bytes, the pointer says ${pointer.size} (truncated or replaced)` };
    }
    if (sha256 !== pointer.sha256) return { ok: false, reason: 'digest_mismatch', problem: `object SHA-256 is ${sha256}, the pointer says ${pointer.sha256}` };
    // The version is served as the snapshot's: it must be the hash of these bytes, as a publisher writes it.
    const version = versionOfSha256(sha256);
    if (version !== pointer.version) return { ok: false, reason: 'digest_mismatch', problem: `the pointer's version ${pointer.version} is not the object's content hash ${version}` };
    return { ok: true, bytes };
  }

  private refuse(reason: NatsRefusalReason, problem: string, context: Record<string, unknown>): 'refused' {
    this.options.logger.error({ ...context, reason, bucket: POINTER_BUCKET }, `dataset refused, keeping the previous one: ${problem}`);
    this.lastRefusal = { at: performance.now(), summary: `dataset pointer refused (${reason}): ${problem}` };
    datasetLoadFailures(this.options.registry)?.inc({ service: this.options.service, reason });
    return 'refused';
  }

  private setConnected(connected: boolean, detail: string): void {
    this.connected = connected;
    this.detail = detail;
    this.connectedGauge.set({ service: this.options.service }, connected ? 1 : 0);
  }
}

/** A pointer entry as its revision and value ('' for none): the same from a watch and a get, whose times differ. */
function pointerIdentity(entry: KvEntry | null): string {
  return entry === null ? '' : `${entry.revision}\n${entry.string()}`;
}

function deferred(): Deferred {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}
