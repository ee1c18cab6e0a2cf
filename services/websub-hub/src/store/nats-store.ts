import { JetStreamApiCodes, JetStreamApiError, StorageType, type JetStreamClient } from '@nats-io/jetstream';
import { Kvm, type KV, type KvEntry } from '@nats-io/kv';
import type { TopicName } from '@reviews/domain';
import type { Subscription, TopicState } from '../subscription.js';
import type { Change, SubscriptionStore } from './subscription-store.js';

export const SUBSCRIPTIONS_BUCKET = 'websub-subscriptions';
/** Concurrent writers on one key (replicas, verification + delivery): each lost race re-reads and retries. */
const CAS_ATTEMPTS = 20;
const LIST_CONCURRENCY = 32;
/** A key listing normally takes milliseconds; see listKeys. */
const KEYS_TIMEOUT_MS = 2_000;
const KEYS_ATTEMPTS = 5;

/**
 * Subscriptions in a JetStream KV bucket shared by every hub replica: `sub.<sha256>` per
 * subscription, `topic.<name>` per topic. Every write is a revision-checked compare-and-set.
 */
export async function openNatsSubscriptionStore(js: JetStreamClient, replicas = 1): Promise<SubscriptionStore> {
  const kv = await new Kvm(js).create(SUBSCRIPTIONS_BUCKET, {
    description: 'WebSub subscriptions (sub.<sha256(topic\\ncallback)>) and the last announced ETag per topic (topic.<name>).',
    storage: StorageType.File,
    replicas,
    history: 1,
  });
  return {
    get: async (key) => readJson<Subscription>(await kv.get(`sub.${key}`)),
    list: async () => {
      const keys = await listKeys(kv, 'sub.>');
      const found: Subscription[] = [];
      for (let i = 0; i < keys.length; i += LIST_CONCURRENCY) {
        const batch = await Promise.all(keys.slice(i, i + LIST_CONCURRENCY).map(async (k) => readJson<Subscription>(await kv.get(k))));
        for (const s of batch) if (s) found.push(s);
      }
      return found;
    },
    update: (key, change) => casUpdate(kv, `sub.${key}`, change),
    topicState: async (topic) => readJson<TopicState>(await kv.get(`topic.${topic}`)),
    updateTopicState: (topic: TopicName, change: Change<TopicState>) => casUpdate(kv, `topic.${topic}`, change),
    // The connection belongs to the caller.
    close: async () => undefined,
  };
}

/**
 * kv.keys() can wait forever, or name a key twice, when a key in range is updated while it lists (nats.js 3 with
 * nats-server 2.9: a delivery recording its outcome during an announcement did it, and the hub
 * stopped announcing). A listing that does not finish in time is abandoned and started again.
 */
async function listKeys(kv: KV, filter: string): Promise<string[]> {
  for (let attempt = 1; ; attempt++) {
    const iterator = await kv.keys(filter);
    let abandoned = false;
    const timer = setTimeout(() => {
      abandoned = true;
      iterator.stop();
    }, KEYS_TIMEOUT_MS);
    // A key updated during the listing can come twice (its old and its new value).
    const keys = new Set<string>();
    try {
      for await (const key of iterator) keys.add(key);
    } finally {
      clearTimeout(timer);
    }
    if (!abandoned) return [...keys];
    if (attempt === KEYS_ATTEMPTS) throw new Error(`listing ${filter} in ${SUBSCRIPTIONS_BUCKET} did not finish within ${KEYS_TIMEOUT_MS} ms, ${KEYS_ATTEMPTS} times`);
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
