import type { TopicName } from '@reviews/domain';
import { isSubscription, type Subscription, type SubscriptionRecord, type TopicState } from '../subscription.js';

/**
 * A change computed from the current value: the new value, `null` to delete, or `undefined` to leave
 * it as it is. It may run more than once (after a lost compare-and-set), so it must be pure.
 */
export type Change<T> = (current: T | null) => T | null | undefined;

/**
 * Where the hub keeps subscriptions and what it last announced per topic. Every write goes through
 * `update` or `updateRecord`, which are atomic per key (compare-and-set on NATS, serialised
 * in-process on the file store), so concurrent verifications, deliveries and hub replicas never lose
 * each other's writes. One contract test suite runs against both implementations.
 *
 * A key holds a subscription or, for a while after a verified unsubscribe, its UnsubscribeMark.
 * Only verification (which orders requests by them) and the sweep (which forgets them) see marks;
 * to everything else a marked key holds no subscription.
 */
export interface SubscriptionStore {
  /** The subscription under `key`; null when there is none, or only a mark. */
  get(key: string): Promise<Subscription | null>;
  /** Every subscription, marks left out. */
  list(): Promise<Subscription[]>;
  /**
   * Apply `change` to the subscription under `key` atomically; resolves to the subscription stored
   * afterwards. A mark reads as null and stays unless the change stores a subscription.
   */
  update(key: string, change: Change<Subscription>): Promise<Subscription | null>;
  /** Every record, marks included. */
  listRecords(): Promise<SubscriptionRecord[]>;
  /** Apply `change` to the record under `key` atomically, mark or subscription; resolves to the record stored afterwards. */
  updateRecord(key: string, change: Change<SubscriptionRecord>): Promise<SubscriptionRecord | null>;
  topicState(topic: TopicName): Promise<TopicState | null>;
  updateTopicState(topic: TopicName, change: Change<TopicState>): Promise<TopicState | null>;
  close(): Promise<void>;
}

/** The subscription a record holds, if it is one. */
export function subscriptionIn(record: SubscriptionRecord | null): Subscription | null {
  return record !== null && isSubscription(record) ? record : null;
}

/** A change to the subscription under a key, as a change to its record: how `update` treats a mark. */
export function changeOfSubscription(change: Change<Subscription>): Change<SubscriptionRecord> {
  return (record) => {
    if (record === null || isSubscription(record)) return change(record);
    const next = change(null);
    return next === null ? undefined : next;
  };
}
