import { createHash } from 'node:crypto';
import type { TopicName } from '@reviews/domain';

/** One verified subscription, keyed by (topic URL, callback URL) as W3C WebSub §5.1 requires. */
export interface Subscription {
  readonly key: string;
  readonly topic: TopicName;
  /** As the subscriber's latest verified request spelled it (its denial names the topic so); the key uses the hub's own URL. */
  readonly topicUrl: string;
  readonly callback: string;
  /** HMAC key for X-Hub-Signature; null = deliveries are unsigned. Never logged. */
  readonly secret: string | null;
  readonly leaseSeconds: number;
  readonly verifiedAt: number;
  readonly expiresAt: number;
  /** When the request that produced this state was received: an older request never overrides it. */
  readonly requestedAt: number;
  /** Consecutive failed deliveries; any 2xx resets it. */
  readonly failures: number;
  /**
   * ETag of the identity bytes last acknowledged with 2xx (a new subscription starts with the
   * topic's announced one), so a repeated job never re-sends them and a restart sees who is owed.
   */
  readonly deliveredEtag: string | null;
  readonly lastStatus: number | null;
  readonly lastAttemptAt: number | null;
  /**
   * The notification being sent to it now, by whichever replica: one at a time per subscription, so a
   * slow POST of older content cannot land after a newer one, nor keep a newer one from being sent.
   */
  readonly delivering?: DeliveryClaim;
}

/** A delivery under way; it lapses at `until`, so a replica that died mid-POST holds no one up for long. */
export interface DeliveryClaim {
  readonly etag: string;
  readonly seq: number;
  /** Unique per attempt: tells the attempt that made the claim from any other. */
  readonly token: string;
  readonly until: number;
}

/**
 * What a verified unsubscribe leaves under the subscription's key instead of nothing: the order of
 * that request, so that an older subscribe whose verification ends later cannot bring the
 * subscription back (W3C WebSub §5.1). Swept at `forgetAt`, once no older request can be applied.
 */
export interface UnsubscribeMark {
  readonly key: string;
  readonly unsubscribed: true;
  readonly requestedAt: number;
  readonly forgetAt: number;
}

/** What the store keeps under a subscription key. */
export type SubscriptionRecord = Subscription | UnsubscribeMark;

export function isSubscription(record: SubscriptionRecord): record is Subscription {
  return !('unsubscribed' in record);
}

/** What the periodic sweep deletes: a subscription whose lease ran out, or a mark past its `forgetAt`. */
export function isDueForSweep(record: SubscriptionRecord, now: number): boolean {
  return isSubscription(record) ? !isActive(record, now) : record.forgetAt <= now;
}

/** What the hub last announced for a topic; `seq` orders changes across replicas. */
export interface TopicState {
  readonly etag: string;
  readonly seq: number;
  /** When the announced dataset was published, by its publisher's clock: for people reading the store (hub replicas order announcements by the dataset pointer). */
  readonly publishedAtMs: number;
}

/** sha256(topic URL + "\n" + callback URL), hex: a fixed-length key that is safe in KV and file names. */
export function subscriptionKey(topicUrl: string, callback: string): string {
  return createHash('sha256').update(`${topicUrl}\n${callback}`).digest('hex');
}

export function isActive(subscription: Subscription, now: number): boolean {
  return subscription.expiresAt > now;
}

export interface LeaseBounds {
  readonly defaultSeconds: number;
  readonly minSeconds: number;
  readonly maxSeconds: number;
}

/**
 * How long after its last write a subscription record can still matter: a lease runs from its
 * verification, which the record's write follows, and an unsubscribe mark is forgotten within
 * minutes. A day more covers replicas' and NATS's clocks disagreeing.
 */
export function recordLifetimeMs(maxLeaseSeconds: number): number {
  return maxLeaseSeconds * 1000 + 24 * 3_600_000;
}

/** The lease the hub grants: the requested one (or the default) clamped into the configured bounds. */
export function grantLease(requested: number | null, bounds: LeaseBounds): number {
  const wanted = requested ?? bounds.defaultSeconds;
  return Math.min(bounds.maxSeconds, Math.max(bounds.minSeconds, wanted));
}
