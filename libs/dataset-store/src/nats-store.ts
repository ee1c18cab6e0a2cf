import { jetstream, JetStreamApiCodes, JetStreamApiError, JsHeaders, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { Kvm, type KV, type KvEntry } from '@nats-io/kv';
import { Objm, setSha256Backend, type ObjectStore } from '@nats-io/obj';
import { headers as createHeaders, type MsgHdrs, type NatsConnection } from '@nats-io/transport-node';
import { canonicalBytesVersion, canonicalDatasetBytes, type DatasetInput } from '@reviews/domain';
import {
  DATASET_OBJECT_BUCKET,
  datasetObjectName,
  earlierPointers,
  type DatasetPointer,
  messagesHeld,
  OBJECT_CHUNK_BYTES,
  OBJECT_METADATA_PREFIX,
  OBJECT_STREAM,
  objectChunkSubject,
  objectMetadataSubject,
  objectStoreSettings,
  POINTER_BUCKET,
  POINTER_KEY,
  pointerBucketSettings,
  type PointerRead,
  readPointer,
  RETAINED_VERSIONS,
  sha256Hex,
} from './nats-layout.js';
import { readDatasetObject } from './nats-object-read.js';
import { fetchUpTo, withReadOnceConsumer } from './read-once-consumer.js';
import { publishTraceparent } from './nats-trace.js';
import { MAX_DATASET_BYTES, tooLargeProblem } from './source.js';

/** JetStream request timeout: bounds every store operation when the server stops answering. */
export const NATS_REQUEST_TIMEOUT_MS = 5_000;
/** JSStreamMsgDeleteFailedF: nats-server's answer to deleting a message that is gone (the client names no constant for it). */
const MESSAGE_DELETE_FAILED = 10057;
/** Message sequences one fetch asks for when deleting an object's chunks (headers only: a few hundred bytes each). */
const SEQUENCES_PER_FETCH = 256;
/** Concurrent publishers racing for the pointer: each lost race re-reads and tries again. */
const POINTER_CAS_ATTEMPTS = 5;
/**
 * How long an object no pointer has named yet is left alone by pruning: it may be another
 * publisher's, stored and read back but not yet pointed to (a 256 MiB upload takes about a minute).
 */
const UNNAMED_OBJECT_GRACE_MS = 15 * 60_000;
/** A read-back still unfinished by then is given up, as with a server that barely answers. */
const READ_BACK_STALL_MS = 60_000;
/** How long a pointer write that got no answer is sent again to learn whether it landed (see settlePointerWrite), and the pause between sends. */
const POINTER_SETTLE_MS = 15_000;
const POINTER_SETTLE_PAUSE_MS = 1_000;

export interface PublishOutcome {
  readonly status: 'published' | 'already-current';
  readonly version: string;
  readonly pointer: DatasetPointer;
  /** Why old objects could not be pruned after the pointer moved (the publish itself succeeded). */
  readonly pruneProblem?: string;
  /**
   * The version another publisher moved the pointer to while this publish ran, which this one then
   * replaced: publishes are last-writer-wins, and the later writer is told whom it overtook.
   */
  readonly replacedConcurrent?: string;
  /** The pointer write got no answer (NATS hung, or its answer was lost); sent again, it was found to have moved the pointer. */
  readonly confirmedLate?: true;
}

/** `publishIfEmpty` found a dataset pointer and left the store as it was. */
export interface StoreNotEmpty {
  readonly status: 'store-not-empty';
  /** The pointer the store holds, or why it cannot be read (an unreadable pointer still counts as a dataset). */
  readonly current: PointerRead;
}

export interface PublishOptions {
  /** W3C traceparent of the publish; defaults to the active span's or a fresh one. */
  readonly traceparent?: string;
  /**
   * When the publish began (the CLI: before it read and checked the file, which takes seconds for a
   * large one): a pointer published since then was made while this one ran (replacedConcurrent).
   */
  readonly startedAt?: Date;
}

/** A store operation failed (an object that does not read back as written, say); unless a PointerMovedError, the pointer was not moved. */
export class DatasetStoreError extends Error {
  override readonly name: string = 'DatasetStoreError';
}

/** The pointer moved, but what follows it failed: unlike other store errors, the current dataset changed. */
export class PointerMovedError extends DatasetStoreError {
  override readonly name = 'PointerMovedError';
}

/** The pointer write got no answer, and none came while it was sent again: the pointer may or may not name this publish's version. */
export class PointerOutcomeUnknownError extends DatasetStoreError {
  override readonly name = 'PointerOutcomeUnknownError';
}

/** The dataset itself is refused, whatever the state of NATS: publishing it again cannot help. */
export class DatasetTooLargeError extends DatasetStoreError {
  override readonly name = 'DatasetTooLargeError';
}

/** The two buckets of the dataset store, created on first use with the documented settings, and the client they were opened with. */
export interface DatasetBuckets {
  readonly objects: ObjectStore;
  readonly pointers: KV;
  readonly js: JetStreamClient;
}

export async function openDatasetBuckets(nc: NatsConnection, replicas: number): Promise<DatasetBuckets> {
  // The object store digests what it writes with SHA-256, by default in pure JavaScript: ~20-30 ms of
  // CPU per 2 MB dataset instead of ~1 ms with node:crypto. Process-wide and idempotent.
  setSha256Backend('native');
  const js = jetstream(nc, { timeout: NATS_REQUEST_TIMEOUT_MS });
  const [objects, pointers] = await Promise.all([
    new Objm(js).create(DATASET_OBJECT_BUCKET, objectStoreSettings(replicas)),
    new Kvm(js).create(POINTER_BUCKET, pointerBucketSettings(replicas)),
  ]);
  return { objects, pointers, js };
}

/**
 * The version the `current` pointer designates now, read on each call; null without a pointer, or with one
 * this version cannot read. Hub replicas announce a dataset only while it is the current one.
 */
export function currentDatasetVersion(nc: NatsConnection): () => Promise<string | null> {
  let pointers: Promise<KV> | undefined;
  return async () => {
    pointers ??= new Kvm(jetstream(nc, { timeout: NATS_REQUEST_TIMEOUT_MS })).open(POINTER_BUCKET).catch((error: unknown) => {
      pointers = undefined;
      throw error;
    });
    const entry = await (await pointers).get(POINTER_KEY);
    const read = entry === null ? null : readPointer(entry);
    return read?.ok ? read.pointer.version : null;
  };
}

/**
 * The publishing side of the NATS dataset store: stores a validated dataset as an object, reads it
 * back, and only then moves the `current` pointer with compare-and-set. The pointer move is the
 * change event every replica follows; old objects are pruned only after it succeeded.
 */
export class NatsDatasetStore {
  private constructor(
    private readonly buckets: DatasetBuckets,
    private readonly manager: JetStreamManager,
  ) {}

  static async open(nc: NatsConnection, replicas: number): Promise<NatsDatasetStore> {
    const buckets = await openDatasetBuckets(nc, replicas);
    return new NatsDatasetStore(buckets, await buckets.js.jetstreamManager());
  }

  async publish(input: DatasetInput, options: PublishOptions = {}): Promise<PublishOutcome> {
    return this.publishUnless<never>(input, options, () => null);
  }

  /**
   * Publish only into a store that holds no dataset yet: no pointer, or a deleted one. A seed uses
   * this so that it never replaces what someone published; a pointer this version cannot read
   * counts as a dataset too (it may come from a newer release). Racing seeds are settled by the
   * pointer's compare-and-set: the loser re-reads, finds the winner's pointer and stops.
   */
  async publishIfEmpty(input: DatasetInput, options: PublishOptions = {}): Promise<PublishOutcome | StoreNotEmpty> {
    return this.publishUnless(input, options, (current): StoreNotEmpty => ({ status: 'store-not-empty', current }));
  }

  /** The publish loop; `refuse` may stop it when the store already holds a live pointer. */
  private async publishUnless<Refusal>(input: DatasetInput, options: PublishOptions, refuse: (current: PointerRead) => Refusal | null): Promise<PublishOutcome | Refusal> {
    const bytes = canonicalDatasetBytes(input);
    if (bytes.length > MAX_DATASET_BYTES) {
      throw new DatasetTooLargeError(tooLargeProblem(bytes.length));
    }
    const version = canonicalBytesVersion(bytes);
    const sha256 = sha256Hex(bytes);
    const object = datasetObjectName(version);

    for (let attempt = 1; attempt <= POINTER_CAS_ATTEMPTS; attempt++) {
      const entry = await this.buckets.pointers.get(POINTER_KEY);
      // publish() replaces a malformed pointer: publishing is how an operator repairs it.
      const current = entry === null ? null : readPointer(entry);
      // After a lost compare-and-set the pointer read is another publisher's, written while this one ran; so is one published since it began.
      const since = options.startedAt?.getTime() ?? Number.POSITIVE_INFINITY;
      const concurrent = entry?.operation === 'PUT' && current?.ok && (attempt > 1 || Date.parse(current.pointer.published_at) >= since) ? current.pointer.version : undefined;
      if (entry?.operation === 'PUT' && current !== null) {
        const refusal = refuse(current);
        if (refusal !== null) return refusal;
      }
      if (current?.ok && current.pointer.version === version) return { status: 'already-current', version, pointer: current.pointer };

      await this.storeVerified(object, bytes, sha256);
      const pointer: DatasetPointer = {
        version,
        object,
        published_at: new Date().toISOString(),
        sha256,
        size: bytes.length,
        traceparent: options.traceparent ?? publishTraceparent(),
      };
      const value = JSON.stringify(pointer);
      let revision: number;
      let confirmedLate = false;
      try {
        revision = await this.writePointer(value, entry);
      } catch (error) {
        if (lostCompareAndSet(error)) continue;
        // NATS's own refusal (its storage full, say): nothing was written.
        if (error instanceof JetStreamApiError) throw error;
        const settled = await this.settlePointerWrite(value, entry, version, error);
        if (settled === null) continue;
        revision = settled;
        confirmedLate = true;
      }
      try {
        // A publisher pruning meanwhile may be deleting this version's object, stored before its
        // last five (a version published again reuses it). Claiming it after the move settles the
        // race either way: a deletion still to come finds its record changed and leaves it, one
        // already done is seen here and the object stored again.
        if (!(await this.claim(object))) {
          await this.storeVerified(object, bytes, sha256);
          revision = await this.pointAgain(value, revision, version);
        }
      } catch (error) {
        if (error instanceof PointerMovedError) throw error;
        throw new PointerMovedError(`the pointer now names ${version}, but its object could not be kept: ${(error as Error).message}; publish the same file again`);
      }
      // The next publish prunes what this one could not.
      const pruneProblem = await this.pruneOldVersions(revision).then(
        () => null,
        (error: unknown) => (error as Error).message,
      );
      return {
        status: 'published',
        version,
        pointer,
        ...(pruneProblem === null ? {} : { pruneProblem }),
        ...(concurrent === undefined ? {} : { replacedConcurrent: concurrent }),
        ...(confirmedLate ? { confirmedLate } : {}),
      };
    }
    throw new DatasetStoreError(`the pointer kept moving under ${POINTER_CAS_ATTEMPTS} publish attempts; try again`);
  }

  /** Moves the pointer from `entry` (none, or a deleted one: created) to `value`, compare-and-set; the new revision. */
  private writePointer(value: string, entry: KvEntry | null): Promise<number> {
    return entry !== null && entry.operation === 'PUT' ? this.buckets.pointers.update(POINTER_KEY, value, entry.revision) : this.buckets.pointers.create(POINTER_KEY, value);
  }

  /**
   * A pointer write that got no answer (a timeout, the connection lost) may have landed, or may land
   * still. Each write is a compare-and-set on the revision read before it, so only one write can come
   * next: the same write is sent again until NATS answers it. Accepted, it is this publish's move; refused
   * as a lost race, the first write after `entry` is this one's (its exact value, in the pointer's
   * history) or another publish's, and this one then goes round again as after any lost race (null).
   * No answer within POINTER_SETTLE_MS: the outcome is unknown, and said so.
   */
  private async settlePointerWrite(value: string, entry: KvEntry | null, version: string, unanswered: unknown): Promise<number | null> {
    const giveUpAt = Date.now() + POINTER_SETTLE_MS;
    let lastError = unanswered;
    while (Date.now() < giveUpAt) {
      await new Promise((resolve) => setTimeout(resolve, POINTER_SETTLE_PAUSE_MS));
      try {
        return await this.writePointer(value, entry);
      } catch (error) {
        lastError = error;
        if (!lostCompareAndSet(error)) continue;
        try {
          const latest = await this.buckets.pointers.get(POINTER_KEY);
          if (latest === null) continue;
          const since = entry?.revision ?? 0;
          const landed = (await earlierPointers(this.buckets.pointers, latest.revision + 1)).find((earlier) => earlier.revision > since && earlier.string() === value);
          return landed?.revision ?? null;
        } catch (readError) {
          lastError = readError;
        }
      }
    }
    throw new PointerOutcomeUnknownError(
      `moving the pointer to ${version} got no answer (${(unanswered as Error).message}), nor did NATS answer for ${POINTER_SETTLE_MS / 1000} s after (${(lastError as Error).message}): ` +
        'the dataset may have been published. Check the version a replica serves (/readyz), or publish the same file again: it says "already current" if this one was published, and publishes it otherwise',
    );
  }

  /**
   * Writes the pointer again, unchanged, as a new revision: replicas that read it while its object was
   * deleted refused it as missing, and only a pointer move makes them fetch again. Another publish
   * having moved it since needs nothing more: replicas follow that one.
   */
  private async pointAgain(value: string, revision: number, version: string): Promise<number> {
    try {
      return await this.buckets.pointers.update(POINTER_KEY, value, revision);
    } catch (error) {
      if (lostCompareAndSet(error)) return revision;
      // Publishing the same file again would find it current and change nothing.
      throw new PointerMovedError(
        `the pointer names ${version} and its object is stored, but writing the pointer again failed: ${(error as Error).message}; replicas that read the pointer while the object was away keep their previous version until the next publish of another version`,
      );
    }
  }

  /** Put the object unless an intact copy is already there, then prove it reads back byte-exact. */
  private async storeVerified(name: string, bytes: Uint8Array, sha256: string): Promise<void> {
    const existing = await this.buckets.objects.info(name);
    // Deleted or replaced while read (a concurrent prune), or NATS trouble: it is stored again and that copy read back.
    const intact = existing !== null && !existing.deleted && existing.size === bytes.length && (await this.readsBackAs(name, sha256).catch(() => false));
    if (!intact) {
      await this.buckets.objects.putBlob({ name, options: { max_chunk_size: OBJECT_CHUNK_BYTES } }, bytes);
      // Failing to read it back (a server that stopped answering) is said as such, not as different bytes.
      const readBack = await this.readsBackAs(name, sha256).catch((error: unknown) => {
        throw new DatasetStoreError(`object ${DATASET_OBJECT_BUCKET}/${name} was stored but reading it back failed: ${(error as Error).message}; pointer not moved`);
      });
      if (!readBack) {
        throw new DatasetStoreError(`object ${DATASET_OBJECT_BUCKET}/${name} did not read back with SHA-256 ${sha256}; pointer not moved`);
      }
    }
  }

  /**
   * Rewrites the object's metadata record as it is, on condition that it is still the record just
   * read: true when the object is there (its record now newer than any a pruning publisher listed),
   * false when it is deleted or gone.
   */
  private async claim(name: string): Promise<boolean> {
    const subject = objectMetadataSubject(name);
    for (;;) {
      const record = await this.manager.streams.getMessage(OBJECT_STREAM, { last_by_subj: subject });
      if (record === null || record.json<{ deleted?: boolean }>().deleted === true) return false;
      try {
        await this.buckets.js.publish(subject, record.data, { headers: rollup(), expect: { lastSubjectSequence: record.seq } });
        return true;
      } catch (error) {
        if (!lostCompareAndSet(error)) throw error;
      }
    }
  }

  private async readsBackAs(name: string, sha256: string): Promise<boolean> {
    const stored = await readDatasetObject(this.buckets.js, name, AbortSignal.timeout(READ_BACK_STALL_MS));
    return stored.status === 'intact' && stored.sha256 === sha256;
  }

  /**
   * Keep the objects of the last RETAINED_VERSIONS versions the pointer named (the current one first),
   * the ones a lagging replica may still fetch; delete the rest. Publish order comes from the pointer's
   * history, not from object times: a version published again reuses its object, whose time is that of
   * its first upload, and it must not be the one deleted. Objects older than the history go by time,
   * once past UNNAMED_OBJECT_GRACE_MS: a younger one may be a concurrent publish in flight.
   */
  private async pruneOldVersions(movedTo: number): Promise<void> {
    // Listed before the pointer is read: an object another publisher claimed before this listing was
    // pointed to before it, so the pointer read next names it; one claimed later is not deleted.
    const { stored, deleted } = await this.storedObjects();
    // A deletion record still there is a prune cut short (or the client's own delete()): its chunks may be too.
    for (const leftover of deleted) await this.finishDeletion(leftover.meta.nuid, objectMetadataSubject(leftover.meta.name), leftover.seq);
    // Other publishers may have moved the pointer since: their versions are the most recent.
    const latest = await this.buckets.pointers.get(POINTER_KEY);
    if (latest === null) return;
    const recent: string[] = [];
    for (const entry of await earlierPointers(this.buckets.pointers, Math.max(movedTo, latest.revision) + 1)) {
      const read = readPointer(entry);
      if (read.ok && !recent.includes(read.pointer.object)) recent.push(read.pointer.object);
    }
    const byPublishOrder = (name: string) => {
      const index = recent.indexOf(name);
      return index === -1 ? recent.length : index;
    };
    stored.sort((a, b) => byPublishOrder(a.meta.name) - byPublishOrder(b.meta.name) || b.storedAtMs - a.storedAtMs);
    // The server's clock, as on the records' times: a publisher's own clock may be off.
    const now = latest.created.getTime();
    for (const stale of stored.slice(RETAINED_VERSIONS)) {
      if (!recent.includes(stale.meta.name) && now - stale.storedAtMs < UNNAMED_OBJECT_GRACE_MS) continue;
      await this.deleteUnlessClaimed(stale);
    }
  }

  /**
   * Deletes an object unless its metadata record changed since it was listed (a publisher claimed it
   * for a version published again), then removes the deletion's own record: the object store's
   * `delete()` leaves one for good (a soak test counted 79 after 82 publishes, each holding a whole
   * 8 MB block on disk and in nats-server 2.9's memory). Chunks go by the listed object's nuid and
   * records up to the deletion's, so an object stored again under the name meanwhile is untouched.
   */
  private async deleteUnlessClaimed(stale: StoredObject): Promise<void> {
    const subject = objectMetadataSubject(stale.meta.name);
    const deletion = JSON.stringify({ ...stale.meta, deleted: true, size: 0, chunks: 0, digest: '' });
    let deletionSeq: number;
    try {
      deletionSeq = (await this.buckets.js.publish(subject, deletion, { headers: rollup(), expect: { lastSubjectSequence: stale.seq } })).seq;
    } catch (error) {
      if (lostCompareAndSet(error)) return;
      throw error;
    }
    await this.finishDeletion(stale.meta.nuid, subject, deletionSeq);
  }

  /**
   * Removes the chunks, then the records up to the deletion's. Both steps may be done again: a prune cut
   * short between them is finished by the next (its deletion record is still listed). Chunks go one
   * message at a time: nats-server 2.9.10 never gives back, in its count of the account's storage, the
   * space a purge by subject frees (a soak read 87 MB used for 10 MB held, and at a storage limit every
   * write failed), while a message deletion does. Chunks the stream's leader still holds after that
   * (a listing consumer on a replica behind it saw fewer) are purged all the same.
   */
  private async finishDeletion(nuid: string, subject: string, deletionSeq: number): Promise<void> {
    const chunks = objectChunkSubject(nuid);
    for (const seq of await messageSequences(this.buckets.js, chunks)) {
      await this.manager.streams.deleteMessage(OBJECT_STREAM, seq, false).catch((error: unknown) => {
        // Another publisher finishing the same deletion took it first.
        if (!(error instanceof JetStreamApiError && error.code === MESSAGE_DELETE_FAILED && /no message found/i.test(error.message))) throw error;
      });
    }
    if ((await messagesHeld(this.manager, chunks)) > 0) await this.manager.streams.purge(OBJECT_STREAM, { filter: chunks });
    await this.manager.streams.purge(OBJECT_STREAM, { filter: subject, seq: deletionSeq + 1 });
  }

  /**
   * The objects stored now, each read by its metadata subject. Not the client's `list()`: its
   * iterator waits for as many records as were there when it began, and a deletion meanwhile (another
   * publisher pruning) takes one away, so it never ended (about one run in three of 8 concurrent publishes).
   */
  private async storedObjects(): Promise<{ stored: StoredObject[]; deleted: StoredObject[] }> {
    const { state } = await this.manager.streams.info(OBJECT_STREAM, { subjects_filter: `${OBJECT_METADATA_PREFIX}>` });
    const stored: StoredObject[] = [];
    const deleted: StoredObject[] = [];
    for (const subject of Object.keys(state.subjects ?? {})) {
      const record = await this.manager.streams.getMessage(OBJECT_STREAM, { last_by_subj: subject });
      const meta = record?.json<StoredObject['meta'] & { deleted?: boolean }>();
      if (record && meta) (meta.deleted ? deleted : stored).push({ storedAtMs: record.time.getTime(), seq: record.seq, meta });
    }
    return { stored, deleted };
  }
}

/** Sequences of the messages `filter` matches now, read without their payloads. */
async function messageSequences(js: JetStreamClient, filter: string): Promise<number[]> {
  return withReadOnceConsumer(
    js,
    OBJECT_STREAM,
    filter,
    async (consumer, info) => {
      const sequences: number[] = [];
      for await (const message of fetchUpTo(consumer, info.num_pending, { perFetch: SEQUENCES_PER_FETCH, expiresMs: NATS_REQUEST_TIMEOUT_MS })) sequences.push(message.seq);
      return sequences;
    },
    { headersOnly: true },
  );
}

/** An object as its metadata record describes it, and that record's sequence (what a conditional deletion expects). */
interface StoredObject {
  readonly storedAtMs: number;
  readonly seq: number;
  readonly meta: { readonly name: string; readonly nuid: string } & Record<string, unknown>;
}

/** A record that replaces the subject's earlier ones, as the object store writes its metadata. */
function rollup(): MsgHdrs {
  const headers = createHeaders();
  headers.set(JsHeaders.RollupHdr, JsHeaders.RollupValueSubject);
  return headers;
}

function lostCompareAndSet(error: unknown): boolean {
  return (
    error instanceof JetStreamApiError &&
    (error.code === JetStreamApiCodes.StreamWrongLastSequence || error.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown)
  );
}
