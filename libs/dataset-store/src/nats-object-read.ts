import { createHash } from 'node:crypto';
import type { JetStreamClient, JetStreamManager, StoredMsg } from '@nats-io/jetstream';
import { DATASET_OBJECT_BUCKET, messagesHeld, OBJECT_STREAM, objectChunkSubject, objectMetadataSubject } from './nats-layout.js';
import { fetchUpTo, withReadOnceConsumer } from './read-once-consumer.js';

/** What reading one object of the dataset bucket found. */
export type ObjectRead =
  | { readonly status: 'missing' }
  /** The object's chunks do not add up to what its own metadata record says (its size, chunk count, SHA-256 digest), or that record is unreadable. */
  | { readonly status: 'corrupt'; readonly problem: string }
  /** The bytes, which match the metadata record's digest, and that digest in hex. */
  | { readonly status: 'intact'; readonly bytes: Uint8Array; readonly sha256: string };

/** The metadata record's fields this reader relies on, as the object store writes them. */
interface ObjectMetadata {
  readonly nuid?: unknown;
  readonly size?: unknown;
  readonly chunks?: unknown;
  readonly digest?: unknown;
  readonly deleted?: unknown;
}

const DIGEST_PREFIX = 'SHA-256=';
/**
 * Chunks one fetch asks for: 8 MiB at the store's 1 MiB chunks. A server queues at most 64 MiB for a
 * client before cutting it off as a slow consumer, and one fetch of a whole 100 MB object was cut
 * (its chunks, never acknowledged, never came again).
 */
const CHUNKS_PER_FETCH = 8;
/** How long one fetch waits for chunks that do not come: gone, or not yet on the consumer's server. */
const FETCH_EXPIRES_MS = 5_000;

/**
 * Reads an object: its metadata record, then its chunks through a consumer of their own that is deleted
 * once read (withReadOnceConsumer). Not the client's `get()`: it left its consumer on the stream for
 * 5 minutes, and it waited forever for chunks a deletion took away. Reading chunk
 * by chunk with message gets leaves nothing either, but costs a round trip each: 10 MB took 440 ms
 * against about 100 ms fetched.
 *
 * NATS trouble, an object replaced or deleted while read, chunks the stream holds that did not come,
 * and `signal` throw: reading again later may succeed.
 */
export async function readDatasetObject(js: JetStreamClient, name: string, signal: AbortSignal): Promise<ObjectRead> {
  const manager = await js.jetstreamManager(false);
  const record = await manager.streams.getMessage(OBJECT_STREAM, { last_by_subj: objectMetadataSubject(name) });
  if (record === null) return { status: 'missing' };
  const meta = parseMetadata(record);
  if (meta === 'deleted') return { status: 'missing' };
  if (typeof meta === 'string') return { status: 'corrupt', problem: meta };

  const chunks = meta.chunks === 0 ? [] : await fetchChunks(js, meta, signal);
  if (chunks.length < meta.chunks) return shortOfChunks(manager, name, record.seq, meta, chunks.length);
  const hash = createHash('sha256');
  let size = 0;
  for (const chunk of chunks) {
    hash.update(chunk);
    size += chunk.length;
  }
  const digest = hash.digest();
  if (size !== meta.size || !digest.equals(meta.digest)) {
    return { status: 'corrupt', problem: `it reads ${size} bytes with SHA-256 ${digest.toString('hex')}, its metadata says ${meta.size} bytes with ${meta.digest.toString('hex')}` };
  }
  return { status: 'intact', bytes: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size), sha256: digest.toString('hex') };
}

/**
 * Fewer chunks came than the record lists. Only the stream's leader can say whether they are gone: the
 * consumer may sit on a replica still catching up (after a restart, one lagged by whole objects, and
 * its consumers counted none of a new object's chunks), or a connection cut may have lost some. The
 * chunks go after the record changes (a deletion, the same name stored again); with the record
 * unchanged and the chunks not on the leader either, the object is corrupt.
 */
async function shortOfChunks(manager: JetStreamManager, name: string, recordSeq: number, meta: ChunkLayout, received: number): Promise<ObjectRead> {
  const where = `${DATASET_OBJECT_BUCKET}/${name}`;
  const now = await manager.streams.getMessage(OBJECT_STREAM, { last_by_subj: objectMetadataSubject(name) });
  if (now?.seq !== recordSeq) throw new Error(`object ${where} changed while it was read`);
  const stored = await messagesHeld(manager, objectChunkSubject(meta.nuid));
  if (stored >= meta.chunks) throw new Error(`object ${where}: ${received} of its ${meta.chunks} chunks came, though the stream holds them`);
  return { status: 'corrupt', problem: `it has ${stored} of the ${meta.chunks} chunks its metadata record lists` };
}

/** The object's chunks in order, as many as its metadata lists, or fewer when fewer come. */
async function fetchChunks(js: JetStreamClient, meta: ChunkLayout, signal: AbortSignal): Promise<Uint8Array[]> {
  signal.throwIfAborted();
  return withReadOnceConsumer(js, OBJECT_STREAM, objectChunkSubject(meta.nuid), async (consumer, info) => {
    const chunks: Uint8Array[] = [];
    // Counted by the consumer's server as it was made: fewer chunks than listed need no fetch to expire.
    if (info.num_pending < meta.chunks) return chunks;
    for await (const message of fetchUpTo(consumer, meta.chunks, { perFetch: CHUNKS_PER_FETCH, expiresMs: FETCH_EXPIRES_MS, signal })) chunks.push(message.data);
    return chunks;
  });
}

interface ChunkLayout {
  readonly nuid: string;
  readonly size: number;
  readonly chunks: number;
  readonly digest: Buffer;
}

/** The record's chunk layout, 'deleted', or why it cannot be read. */
function parseMetadata(record: StoredMsg): ChunkLayout | 'deleted' | string {
  let meta: ObjectMetadata;
  try {
    meta = record.json<ObjectMetadata>();
  } catch (error) {
    return `its metadata record is not JSON: ${(error as Error).message}`;
  }
  if (meta === null || typeof meta !== 'object') return 'its metadata record is not a JSON object';
  if (meta.deleted === true) return 'deleted';
  const { nuid, size, chunks, digest } = meta;
  if (typeof nuid !== 'string' || nuid === '' || !isCount(size) || !isCount(chunks) || typeof digest !== 'string' || !digest.startsWith(DIGEST_PREFIX)) {
    return 'its metadata record lacks a nuid, a size, a chunk count or a SHA-256 digest';
  }
  if ((size === 0) !== (chunks === 0)) return `its metadata record lists ${chunks} chunks for ${size} bytes`;
  // Node's base64 decoder reads both alphabets: the store writes base64url, older clients plain base64.
  const digestBytes = Buffer.from(digest.slice(DIGEST_PREFIX.length), 'base64');
  if (digestBytes.length !== 32) return `its metadata record's digest is not a SHA-256 digest: ${digest.slice(0, 100)}`;
  return { nuid, size: size as number, chunks: chunks as number, digest: digestBytes };
}

function isCount(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}
