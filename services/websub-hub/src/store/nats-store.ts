import { JetStreamApiCodes, JetStreamApiError, StorageType, type Consumer, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { Kvm, type KV, type KvEntry } from '@nats-io/kv';
import { withReadOnceConsumer } from '@reviews/dataset-store';
import type { TopicName } from '@reviews/domain';
import type { Logger } from '@reviews/runtime';
import { notFound, remakingWhenGone } from '../jetstream-loss.js';
import { isSubscription, type SubscriptionRecord, type TopicState } from '../subscription.js';
import { changeOfSubscription, subscriptionIn, type Change, type SubscriptionStore } from './subscription-store.js';

export const SUBSCRIPTIONS_BUCKET = 'websub-subscriptions';
/** Concurrent writers on one key (replicas, verification + delivery): each lost race re-reads and retries. */
const CAS_ATTEMPTS = 20;
/** A listing receives its first entries within milliseconds and then thousands per second; see listValues. */
const LISTING_STALL_MS = 2_000;
const LISTING_ATTEMPTS = 5;
/** Entries one fetch of a listing asks for. */
const LISTING_BATCH = 1_000;
/** Where a KV bucket keeps its keys, and how it marks a deletion (ADR-8 of nats-architecture-and-design). */
const BUCKET_STREAM = `KV_${SUBSCRIPTIONS_BUCKET}`;
const KEY_SUBJECT_PREFIX = `$KV.${SUBSCRIPTIONS_BUCKET}.`;
const KV_OPERATION_HEADER = 'KV-Operation';
const KV_PURGE = 'PURGE';

export interface NatsSubscriptionStoreOptions {
  readonly logger: Logger;
  /** Stream replicas (NATS_REPLICAS) when this process creates the bucket. */
  readonly replicas?: number;
  /**
   * How long the bucket keeps a key's last write (its stream's max_age): longer than a subscription
   * record lives (recordLifetimeMs), so what ages out is what removals leave behind. A removal has to
   * leave a delete marker: on nats-server 2.9 a listing consumer running while a key is purged is
   * moved past what it had yet to deliver, and every listing during removals started over. Without
   * an age every marker stayed for good, read by every listing (~18 µs each: a churn of 100,000
   * removed subscriptions added ~2 s to every announcement and scrape); age-based removal leaves
   * listings alone. A topic's state ages out too when its topic has not changed for that long: the
   * next announcement records it again. A bucket that keeps writes longer (another replica's longer
   * lease) keeps its age; a shorter one, or one without (older hubs), is raised to this.
   */
  readonly keepWritesMs: number;
}

/**
 * Subscriptions in a JetStream KV bucket shared by every hub replica: `sub.<sha256>` per
 * subscription (or its unsubscribe mark), `topic.<name>` per topic. Every write is a
 * revision-checked compare-and-set. A bucket lost with NATS's store is made again by the first
 * operation that finds it gone.
 */
export async function openNatsSubscriptionStore(js: JetStreamClient, { logger, replicas = 1, keepWritesMs }: NatsSubscriptionStoreOptions): Promise<SubscriptionStore> {
  const openBucket = () =>
    new Kvm(js).create(SUBSCRIPTIONS_BUCKET, {
      description: 'WebSub subscriptions (sub.<sha256(topic\\ncallback)>) and the last announced ETag per topic (topic.<name>).',
      storage: StorageType.File,
      replicas,
      history: 1,
      ttl: keepWritesMs,
    });
  const kv = await openBucket();
  const jsm = await js.jetstreamManager();
  const { config } = await jsm.streams.info(BUCKET_STREAM);
  const keepWritesNanos = keepWritesMs * 1_000_000;
  if (config.max_age === 0 || config.max_age < keepWritesNanos) {
    const previousMs = config.max_age / 1_000_000;
    try {
      await jsm.streams.update(BUCKET_STREAM, { max_age: keepWritesNanos });
      logger.info({ bucket: SUBSCRIPTIONS_BUCKET, keepWritesMs, previousMs }, 'subscription bucket now keeps writes longer than any subscription lives');
    } catch (error) {
      // A NATS user allowed to use the bucket but not to change its stream: the hub works as before.
      logger.warn({ err: error, bucket: SUBSCRIPTIONS_BUCKET, keepWritesMs, previousMs }, 'could not set how long the subscription bucket keeps writes; removed subscriptions leave markers that every listing reads until it is set');
    }
  }
  const remade = remakingWhenGone({
    what: `the subscription bucket ${SUBSCRIPTIONS_BUCKET}`,
    isGone: () => notFound(jsm.streams.info(BUCKET_STREAM)),
    remake: async () => void (await openBucket()),
    logger,
  });
  const records = () => remade(() => listValues<SubscriptionRecord>(js, jsm, 'sub.>'));
  return {
    get: (key) => remade(async () => subscriptionIn(readJson<SubscriptionRecord>(await kv.get(`sub.${key}`)))),
    list: async () => (await records()).filter(isSubscription),
    update: (key, change) => remade(async () => subscriptionIn(await casUpdate(kv, `sub.${key}`, changeOfSubscription(change)))),
    listRecords: records,
    updateRecord: (key, change) => remade(() => casUpdate(kv, `sub.${key}`, change)),
    topicState: (topic) => remade(async () => readJson<TopicState>(await kv.get(`topic.${topic}`))),
    updateTopicState: (topic: TopicName, change: Change<TopicState>) => remade(() => casUpdate(kv, `topic.${topic}`, change)),
    // The connection belongs to the caller.
    close: async () => undefined,
  };
}

/**
 * Every value under `filter` in one pass: the bucket's history, fetched by one consumer in sequence
 * order, so the last entry of each key is its current value or its delete marker (with history 1,
 * the bucket's setting, it is the only one). A key listing followed by a get per key took 350-630 ms
 * at 3,000 subscriptions, this 60-110 ms; an announcement waits for it before its first
 * notification, and every scrape of websub_subscriptions reads it.
 *
 * The listing ends once it has received the range's last message: an update to a key in range
 * comes later in the stream, so it ends only when the last message in range, read again, is one it
 * has received. (A consumer's own count of what is pending cannot say: nats-server 2.9 still counts
 * a replaced revision as pending, and a fan-out updates keys all the time, each delivery recording
 * its outcome.) A listing that stalls all the same (a fetch receives nothing for LISTING_STALL_MS),
 * fails, or sees a key purged is abandoned and started again (see receiveUntil).
 *
 * The consumer is the listing's own and deleted after it (withReadOnceConsumer): the client's
 * `kv.history()` left one on the stream per listing for 5 minutes, and every scrape and
 * announcement lists.
 */
async function listValues<T>(js: JetStreamClient, jsm: JetStreamManager, filter: string): Promise<T[]> {
  const subjects = `${KEY_SUBJECT_PREFIX}${filter}`;
  const lastInRange = async (): Promise<number> => (await jsm.streams.getMessage(BUCKET_STREAM, { last_by_subj: subjects }))?.seq ?? 0;
  for (let attempt = 1; ; attempt++) {
    // Read before the consumer exists, so that any purge during its life has a later marker (see receiveUntil).
    const lastAtStart = await lastInRange();
    const values = await withReadOnceConsumer(js, BUCKET_STREAM, subjects, (consumer) => receiveUntil(consumer, lastAtStart, lastInRange));
    if (values !== null) return [...values.values()] as T[];
    if (attempt === LISTING_ATTEMPTS) throw new Error(`listing ${filter} in ${SUBSCRIPTIONS_BUCKET} did not complete in ${LISTING_ATTEMPTS} attempts (each stalled for ${LISTING_STALL_MS} ms, failed, or was cut short by a purge)`);
  }
}

/**
 * Each key's value (a delete marker removes it) up to the range's last message; null when the listing
 * has to start over: a fetch stalled or failed (a server shutting down ends it with an error), or a key
 * was purged meanwhile. nats-server 2.9 moves every consumer of the stream up to a purge's marker, so
 * the consumer skipped keys it had yet to deliver (5,000 subscriptions listed as 1,000 or none).
 */
async function receiveUntil(consumer: Consumer, lastAtStart: number, lastInRange: () => Promise<number>): Promise<Map<string, unknown> | null> {
  const values = new Map<string, unknown>();
  let last = lastAtStart;
  if (last === 0) return values;
  try {
    for (;;) {
      const batch = await consumer.fetch({ max_messages: LISTING_BATCH, expires: LISTING_STALL_MS });
      let received = 0;
      for await (const message of batch) {
        received++;
        const key = message.subject.slice(KEY_SUBJECT_PREFIX.length);
        // A delete or purge marker carries its operation in a header; a value carries none.
        const operation = message.headers?.get(KV_OPERATION_HEADER);
        if (operation === KV_PURGE && message.seq > lastAtStart) return null;
        if (operation) values.delete(key);
        else values.set(key, message.json());
        if (message.seq >= last) {
          last = await lastInRange();
          if (message.seq >= last) return values;
        }
      }
      if (received === 0) return null;
    }
  } catch {
    return null;
  }
}

function readJson<T>(entry: KvEntry | null): T | null {
  return entry !== null && entry.operation === 'PUT' ? entry.json<T>() : null;
}

async function casUpdate<T>(kv: KV, key: string, change: Change<T>): Promise<T | null> {
  for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
    const entry = await kv.get(key);
    const current = readJson<T>(entry);
    const next = change(current);
    if (next === undefined) return current;
    try {
      if (next === null) {
        if (current !== null && entry) await kv.delete(key, { previousSeq: entry.revision });
      } else if (current !== null && entry) {
        await kv.update(key, JSON.stringify(next), entry.revision);
      } else if (entry) {
        // Deleted keys keep a marker: replace it only if nobody wrote since.
        await kv.update(key, JSON.stringify(next), entry.revision);
      } else {
        await kv.create(key, JSON.stringify(next));
      }
      return next;
    } catch (error) {
      if (isLostRace(error)) continue;
      throw error;
    }
  }
  throw new Error(`compare-and-set on ${key} lost ${CAS_ATTEMPTS} races in a row`);
}

function isLostRace(error: unknown): boolean {
  return (
    error instanceof JetStreamApiError &&
    (error.code === JetStreamApiCodes.StreamWrongLastSequence || error.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown)
  );
}
