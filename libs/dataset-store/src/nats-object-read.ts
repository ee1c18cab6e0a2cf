import { createHash } from 'node:crypto';
import { AckPolicy, DeliverPolicy, type JetStreamClient, type JetStreamManager, type StoredMsg } from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import { DATASET_OBJECT_BUCKET, OBJECT_STREAM, objectChunkSubject, objectMetadataSubject } from './nats-layout.js';

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
/** A fetch's wait for chunks the stream lost after the consumer counted them; a whole 256 MiB object streams in seconds. */
const FETCH_EXPIRES_MS = 30_000;

/** How long an abandoned chunk consumer (its reader's process gone) outlives its last pull. */
const CHUNK_CONSUMER_INACTIVE_MS = 30_000;

/**
 * Reads an object: its metadata record, then its chunks through a consumer of their own that is deleted
 * once read. Not the client's `get()`: it creates a push consumer per read and never deletes it, so each
 * read left one on the stream for the server's 5-minute inactivity threshold (233 at once in a soak,
 * 116 MB of nats-server memory), and it waited forever for chunks a deletion took away. Reading chunk
 * by chunk with message gets leaves nothing either, but costs a round trip each: 10 MB took 440 ms
 * against about 100 ms fetched.
 *
 * NATS trouble, an object replaced or deleted while read, and `signal` throw: reading again later may
 * succeed.
 */
export async function readDatasetObject(js: JetStreamClient, name: string, signal: AbortSignal): Promise<ObjectRead> {
  const manager = await js.jetstreamManager(false);
  const metadataSubject = objectMetadataSubject(name);
  const record = await manager.streams.getMessage(OBJECT_STREAM, { last_by_subj: metadataSubject });
  if (record === null) return { status: 'missing' };
  const meta = parseMetadata(record);
  if (meta === 'deleted') return { status: 'missing' };
  if (typeof meta === 'string') return { status: 'corrupt', problem: meta };

  const chunks = meta.chunks === 0 ? [] : await fetchChunks(js, manager, meta, signal);
  if (chunks.length < meta.chunks) {
    // Chunks go after the metadata record changes (a deletion, the same name stored again): then a
    // later read finds the object's new state. With the record unchanged, they are simply not there.
    const now = await manager.streams.getMessage(OBJECT_STREAM, { last_by_subj: metadataSubject });
    if (now?.seq !== record.seq) throw new Error(`object ${DATASET_OBJECT_BUCKET}/${name} changed while it was read`);
    return { status: 'corrupt', problem: `it has ${chunks.length} of the ${meta.chunks} chunks its metadata record lists` };
  }
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

/** The object's chunks in order, as many as its metadata lists, or fewer when the stream holds fewer. */
async function fetchChunks(js: JetStreamClient, manager: JetStreamManager, meta: ChunkLayout, signal: AbortSignal): Promise<Uint8Array[]> {
  signal.throwIfAborted();
  const consumer = await manager.consumers.add(OBJECT_STREAM, {
    filter_subject: objectChunkSubject(meta.nuid),
    deliver_policy: DeliverPolicy.All,
    ack_policy: AckPolicy.None,
    mem_storage: true,
    num_replicas: 1,
    inactive_threshold: nanos(CHUNK_CONSUMER_INACTIVE_MS),
  });
  try {
    const chunks: Uint8Array[] = [];
    // Counted when the consumer was made: chunks already gone need no wait for a fetch to expire.
    const wanted = Math.min(meta.chunks, consumer.num_pending);
    if (wanted === 0) return chunks;
    const messages = await js.consumers.getConsumerFromInfo(consumer).fetch({ max_messages: wanted, expires: FETCH_EXPIRES_MS });
    const stop = () => messages.stop();
    signal.addEventListener('abort', stop, { once: true });
    try {
      for await (const message of messages) {
        chunks.push(message.data);
        if (chunks.length === wanted) break;
      }
    } finally {
      signal.removeEventListener('abort', stop);
    }
    signal.throwIfAborted();
    return chunks;
  } finally {
    // On a connection closed meanwhile the consumer goes after its inactivity threshold.
    await manager.consumers.delete(OBJECT_STREAM, consumer.name).catch(() => undefined);
  }
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
  if (typeof nuid !== 'string' || nuid === '' || !Number.isSafeInteger(size) || !Number.isSafeInteger(chunks) || typeof digest !== 'string' || !digest.startsWith(DIGEST_PREFIX)) {
    return 'its metadata record lacks a nuid, a size, a chunk count or a SHA-256 digest';
  }
  // Node's base64 decoder reads both alphabets: the store writes base64url, older clients plain base64.
  const digestBytes = Buffer.from(digest.slice(DIGEST_PREFIX.length), 'base64');
  if (digestBytes.length !== 32) return `its metadata record's digest is not a SHA-256 digest: ${digest.slice(0, 100)}`;
  return { nuid, size: size as number, chunks: chunks as number, digest: digestBytes };
}
