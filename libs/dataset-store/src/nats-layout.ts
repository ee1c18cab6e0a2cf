import { createHash } from 'node:crypto';
import { StorageType, type JetStreamManager } from '@nats-io/jetstream';
import type { KV, KvEntry, KvOptions } from '@nats-io/kv';
import { Base64UrlPaddedCodec, type ObjectStoreOptions } from '@nats-io/obj';
import { z } from 'zod';
import { MAX_DATASET_BYTES } from './source.js';

/**
 * Where datasets live in JetStream (docs/adr/0002-nats-dataset-store.md). Publisher and every
 * replica create-or-bind the buckets with these settings, so whichever starts first creates them.
 */
export const DATASET_OBJECT_BUCKET = 'datasets';
/** The object store's stream: one metadata record per object name, and the chunks of each stored object. */
export const OBJECT_STREAM = `OBJ_${DATASET_OBJECT_BUCKET}`;
export const OBJECT_METADATA_PREFIX = `$O.${DATASET_OBJECT_BUCKET}.M.`;
export const POINTER_BUCKET = 'dataset-pointer';
export const POINTER_KEY = 'current';

/** Pointer revisions kept in the KV history: an audit trail of the last publishes. */
export const POINTER_HISTORY = 10;
/** Dataset objects kept after a publish: the current one plus older ones a lagging replica may still fetch. */
export const RETAINED_VERSIONS = 5;
/**
 * Object chunks of up to 1 MiB (the client caps them at the server's max_payload, 1 MiB by default)
 * instead of the client's 128 KiB: the client publishes chunks one after another, each awaiting its
 * JetStream ack, so a 2 MB dataset took 16 round trips before the pointer could move (put 21 → 9 ms).
 */
export const OBJECT_CHUNK_BYTES = 1024 * 1024;
/** Bucket cap: RETAINED_VERSIONS datasets of the largest size, so a runaway publisher cannot fill the disk. */
const OBJECT_BUCKET_MAX_BYTES = RETAINED_VERSIONS * MAX_DATASET_BYTES;
/** A pointer is a few hundred bytes of JSON; anything bigger is not a pointer. */
const POINTER_MAX_VALUE_BYTES = 4096;

export function objectStoreSettings(replicas: number): Partial<ObjectStoreOptions> {
  return {
    description: 'Published review datasets: canonical input bytes, one object per version (v/<version>.json).',
    storage: StorageType.File,
    replicas,
    max_bytes: OBJECT_BUCKET_MAX_BYTES,
  };
}

export function pointerBucketSettings(replicas: number): Partial<KvOptions> {
  return {
    description: 'The current dataset version; a move of key "current" is the dataset-change event.',
    storage: StorageType.File,
    replicas,
    history: POINTER_HISTORY,
    maxValueSize: POINTER_MAX_VALUE_BYTES,
  };
}

export function datasetObjectName(version: string): string {
  return `v/${version}.json`;
}

export function objectMetadataSubject(name: string): string {
  return `${OBJECT_METADATA_PREFIX}${Base64UrlPaddedCodec.encode(name)}`;
}

/** Where one stored copy's chunks are, by the nuid its metadata record names. */
export function objectChunkSubject(nuid: string): string {
  return `$O.${DATASET_OBJECT_BUCKET}.C.${nuid}`;
}

/** How many messages the object stream holds on `subject`, as its leader counts them (a consumer may sit on a replica behind it). */
export async function messagesHeld(manager: JetStreamManager, subject: string): Promise<number> {
  const { state } = await manager.streams.info(OBJECT_STREAM, { subjects_filter: subject });
  return state.subjects?.[subject] ?? 0;
}

/** The value of `dataset-pointer/current`. `traceparent` lives here because KV puts carry no headers. */
export const DatasetPointer = z.object({
  version: z.string().min(1),
  object: z.string().min(1),
  published_at: z.iso.datetime({ offset: true }),
  sha256: z.string().regex(/^[0-9a-f]{64}$/, 'must be a lower-case hex SHA-256 digest'),
  size: z.int().nonnegative(),
  traceparent: z.string().nullable(),
});
export type DatasetPointer = z.infer<typeof DatasetPointer>;

export type PointerRead = { ok: true; pointer: DatasetPointer } | { ok: false; problem: string };

/** Decode a pointer entry without trusting it: a deleted key or a malformed value is a problem, not a throw. */
export function readPointer(entry: KvEntry): PointerRead {
  if (entry.operation !== 'PUT') return { ok: false, problem: `pointer was removed (${entry.operation})` };
  let raw: unknown;
  try {
    raw = JSON.parse(entry.string());
  } catch (error) {
    return { ok: false, problem: `pointer is not JSON: ${(error as Error).message}` };
  }
  const parsed = DatasetPointer.safeParse(raw);
  if (!parsed.success) {
    return { ok: false, problem: `pointer is malformed: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}` };
  }
  return { ok: true, pointer: parsed.data };
}

export function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/**
 * The pointer's earlier revisions, newest first, each read by its revision. Not the client's
 * `history()`: its iterator waits for as many entries as were there when it began, and a publish
 * meanwhile discards the oldest (the bucket keeps POINTER_HISTORY), so it never ends. The bucket
 * holds one key, so its revisions are consecutive.
 */
export async function earlierPointers(pointers: KV, before: number): Promise<KvEntry[]> {
  const entries: KvEntry[] = [];
  for (let revision = before - 1; revision > 0 && revision >= before - POINTER_HISTORY; revision--) {
    const entry = await pointers.get(POINTER_KEY, { revision });
    if (entry?.operation === 'PUT') entries.push(entry);
  }
  return entries;
}
