import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { Objm, type ObjectStore } from '@nats-io/obj';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { DATASET_OBJECT_BUCKET, NatsDatasetStore, OBJECT_STREAM, objectChunkSubject, objectMetadataSubject, readDatasetObject, sha256Hex } from '@reviews/dataset-store';
import { eventually } from '../../../test/support/eventually.js';
import { startNatsServer, type NatsServerHandle } from '../../../test/support/nats-server.js';

const MiB = 1024 * 1024;
const patterned = (size: number, seed: number) => Buffer.from(Uint8Array.from({ length: size }, (_, i) => (i * 31 + seed) % 251));
const unbounded = () => new AbortController().signal;
/** A JetStream client whose stream API's consumers.add is `add`: the real one, seen through a test's hands. */
function withConsumerAdd(js: JetStreamClient, manager: JetStreamManager, add: JetStreamManager['consumers']['add']): JetStreamClient {
  const consumers = Object.assign(Object.create(manager.consumers) as JetStreamManager['consumers'], { add });
  const changed: JetStreamManager = Object.create(manager, { consumers: { value: consumers } });
  return Object.create(js, { jetstreamManager: { value: async () => changed } });
}

describe('readDatasetObject against a real nats-server', () => {
  let server: NatsServerHandle;
  let nc: NatsConnection;
  let js: JetStreamClient;
  let manager: JetStreamManager;
  let objects: ObjectStore;

  beforeAll(async () => {
    server = await startNatsServer();
    nc = await connect({ servers: server.url });
    await NatsDatasetStore.open(nc, 1);
    js = jetstream(nc);
    manager = await jetstreamManager(nc);
    objects = await new Objm(js).open(DATASET_OBJECT_BUCKET);
  });

  afterAll(async () => {
    await nc?.close();
    await server?.dispose();
  });

  /** The reader deletes its consumer without waiting for the answer. */
  const noConsumerLeft = () => eventually(async () => expect(await manager.consumers.list(OBJECT_STREAM).next()).toEqual([]));

  it('reads a multi-chunk object byte-exact with its SHA-256, and leaves no consumer on the stream', async () => {
    const bytes = patterned(3 * MiB + 5, 1);
    await objects.putBlob({ name: 'v/chunked.json', options: { max_chunk_size: MiB } }, bytes);
    const read = await readDatasetObject(js, 'v/chunked.json', unbounded());
    expect(read.status).toBe('intact');
    if (read.status !== 'intact') return;
    expect(Buffer.from(read.bytes).equals(bytes)).toBe(true);
    expect(read.sha256).toBe(sha256Hex(bytes));
    await noConsumerLeft();
  });

  it('reads an object of many chunks in several fetches, intact', async () => {
    const bytes = patterned(25_000, 9);
    await objects.putBlob({ name: 'v/many-chunks.json', options: { max_chunk_size: 1000 } }, bytes);
    expect(await readDatasetObject(js, 'v/many-chunks.json', unbounded())).toMatchObject({ status: 'intact', sha256: sha256Hex(bytes) });
  });

  it('reads an empty object as zero bytes', async () => {
    await objects.putBlob({ name: 'v/empty.json' }, new Uint8Array(0));
    expect(await readDatasetObject(js, 'v/empty.json', unbounded())).toEqual({ status: 'intact', bytes: expect.any(Uint8Array), sha256: sha256Hex(new Uint8Array(0)) });
  });

  it('reads the copy the metadata record names when the name was stored again', async () => {
    await objects.putBlob({ name: 'v/again.json' }, patterned(1000, 2));
    const second = patterned(2000, 3);
    await objects.putBlob({ name: 'v/again.json' }, second);
    expect(await readDatasetObject(js, 'v/again.json', unbounded())).toMatchObject({ status: 'intact', sha256: sha256Hex(second) });
  });

  it('reports a name never stored, and a deleted object, as missing', async () => {
    expect(await readDatasetObject(js, 'v/never.json', unbounded())).toEqual({ status: 'missing' });
    await objects.putBlob({ name: 'v/deleted.json' }, patterned(100, 4));
    await objects.delete('v/deleted.json');
    expect(await readDatasetObject(js, 'v/deleted.json', unbounded())).toEqual({ status: 'missing' });
  });

  it('reports chunks that disagree with the metadata record as corrupt, with both digests', async () => {
    const bytes = patterned(5000, 5);
    const info = await objects.putBlob({ name: 'v/flipped.json' }, bytes);
    await manager.streams.purge(OBJECT_STREAM, { filter: objectChunkSubject(info.nuid) });
    const flipped = Buffer.from(bytes);
    flipped[100]! ^= 1;
    await js.publish(objectChunkSubject(info.nuid), flipped);
    expect(await readDatasetObject(js, 'v/flipped.json', unbounded())).toEqual({
      status: 'corrupt',
      problem: `it reads 5000 bytes with SHA-256 ${sha256Hex(flipped)}, its metadata says 5000 bytes with ${sha256Hex(bytes)}`,
    });
  });

  it('reports chunks gone under an unchanged metadata record as corrupt, not as a read to retry', async () => {
    const info = await objects.putBlob({ name: 'v/chunkless.json', options: { max_chunk_size: 1000 } }, patterned(2500, 6));
    await manager.streams.purge(OBJECT_STREAM, { filter: objectChunkSubject(info.nuid) });
    expect(await readDatasetObject(js, 'v/chunkless.json', unbounded())).toEqual({ status: 'corrupt', problem: 'it has 0 of the 3 chunks its metadata record lists' });
  });

  it('reports a metadata record it cannot read as corrupt', async () => {
    await js.publish(objectMetadataSubject('v/garbled.json'), 'not json');
    expect(await readDatasetObject(js, 'v/garbled.json', unbounded())).toMatchObject({ status: 'corrupt', problem: expect.stringMatching(/^its metadata record is not JSON/) });
    await js.publish(objectMetadataSubject('v/digestless.json'), JSON.stringify({ name: 'v/digestless.json', nuid: 'x', size: 1, chunks: 1, digest: 'MD5=abc' }));
    expect(await readDatasetObject(js, 'v/digestless.json', unbounded())).toEqual({ status: 'corrupt', problem: 'its metadata record lacks a nuid, a size, a chunk count or a SHA-256 digest' });
  });

  it('throws, for a later read to settle, when the object is deleted between its metadata record and its chunks', async () => {
    await objects.putBlob({ name: 'v/pruned.json', options: { max_chunk_size: 1000 } }, patterned(2500, 7));
    // The real client, with a concurrent prune's deletion landing right after the metadata read.
    const pruning = withConsumerAdd(js, manager, async (...args) => {
      await objects.delete('v/pruned.json');
      return manager.consumers.add(...args);
    });
    await expect(readDatasetObject(pruning, 'v/pruned.json', unbounded())).rejects.toThrow(`object ${DATASET_OBJECT_BUCKET}/v/pruned.json changed while it was read`);
    expect(await readDatasetObject(js, 'v/pruned.json', unbounded())).toEqual({ status: 'missing' });
    await noConsumerLeft();
  });

  // In a cluster the consumer may sit on a replica still catching up: a review saw one count none of a new object's chunks.
  it("throws, for a later read to settle, when the consumer's server counts fewer chunks than the stream's leader holds", async () => {
    const bytes = patterned(2500, 10);
    await objects.putBlob({ name: 'v/lagging.json', options: { max_chunk_size: 1000 } }, bytes);
    const lagging = withConsumerAdd(js, manager, async (...args) => ({ ...(await manager.consumers.add(...args)), num_pending: 0 }));
    await expect(readDatasetObject(lagging, 'v/lagging.json', unbounded())).rejects.toThrow(`object ${DATASET_OBJECT_BUCKET}/v/lagging.json: 0 of its 3 chunks came, though the stream holds them`);
    expect(await readDatasetObject(js, 'v/lagging.json', unbounded())).toMatchObject({ status: 'intact', sha256: sha256Hex(bytes) });
  });

  it('gives up a fetch still waiting for chunks once its signal is aborted, and deletes its consumer', async () => {
    // One chunk of three stays, and the consumer is told all three are there: the fetch waits for the rest.
    const info = await objects.putBlob({ name: 'v/waiting.json', options: { max_chunk_size: 1000 } }, patterned(2500, 8));
    await manager.streams.purge(OBJECT_STREAM, { filter: objectChunkSubject(info.nuid), keep: 1 });
    const counting = withConsumerAdd(js, manager, async (...args) => ({ ...(await manager.consumers.add(...args)), num_pending: 3 }));
    const started = Date.now();
    await expect(readDatasetObject(counting, 'v/waiting.json', AbortSignal.timeout(300))).rejects.toThrow(/timeout|aborted/i);
    expect(Date.now() - started).toBeLessThan(2_000);
    await noConsumerLeft();
  });

  it('refuses a metadata record whose chunk count and size disagree (none for some bytes, or the reverse) as corrupt', async () => {
    for (const [name, chunks, size] of [['v/negative.json', -1, 10], ['v/no-chunks.json', 0, 10], ['v/no-bytes.json', 2, 0]] as const) {
      await js.publish(objectMetadataSubject(name), JSON.stringify({ name, nuid: 'n', size, chunks, digest: `SHA-256=${Buffer.alloc(32).toString('base64url')}` }));
      expect(await readDatasetObject(js, name, unbounded())).toMatchObject({ status: 'corrupt' });
    }
  });
});
