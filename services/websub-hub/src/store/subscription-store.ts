import type { TopicName } from '@reviews/domain';
import type { Subscription, TopicState } from '../subscription.js';

/**
 * A change computed from the current value: the new value, `null` to delete, or `undefined` to leave
 * it as it is. It may run more than once (after a lost compare-and-set), so it must be pure.
 */
export type Change<T> = (current: T | null) => T | null | undefined;

/**
 * Where the hub keeps subscriptions and what it last announced per topic. Every write goes through
 * `update`, which is atomic per key (compare-and-set on NATS, serialised in-process on the file
 * store), so concurrent verifications, deliveries and hub replicas never lose each other's writes.
 * One contract test suite runs against both implementations.
 */
export interface SubscriptionStore {
  get(key: string): Promise<Subscription | null>;
  list(): Promise<Subscription[]>;
  /** Apply `change` atomically; resolves to the value stored afterwards. */
  update(key: string, change: Change<Subscription>): Promise<Subscription | null>;
  topicState(topic: TopicName): Promise<TopicState | null>;
  updateTopicState(topic: TopicName, change: Change<TopicState>): Promise<TopicState | null>;
  close(): Promise<void>;
}
