import { createHmac, randomUUID } from 'node:crypto';
import { TOPICS, topicLinkHeader, type Snapshot } from '@reviews/domain';
import { activeTraceparent, contextFromTraceparent, SpanKind, withSpan, type Logger } from '@reviews/runtime';
import type { HubMetrics } from './metrics.js';
import { DELIVERY_HOLD_MS, type OutboundClient } from './outbound.js';
import type { DeliveryJob, JobOutcome, JobQueue } from './queue/job-queue.js';
import type { Change, SubscriptionStore } from './store/subscription-store.js';
import { isActive, isDueForSweep, isSubscription, type DeliveryClaim, type Subscription } from './subscription.js';
import { sendDenial } from './verification.js';

/** Spec §6/§8: three consecutive failed notifications remove the subscription. */
export const MAX_CONSECUTIVE_FAILURES = 3;
export const DENIAL_REASON = 'delivery-failed-3-times';
/** This replica has not loaded the announced dataset yet: look again shortly. */
const SNAPSHOT_LAG_RETRY_MS = 250;
/** This replica has loaded no dataset yet (it is starting): leave the job to the replicas that have one a while. */
const NO_SNAPSHOT_RETRY_MS = 1_000;
/** A delivery the origin's busy connections kept from being sent goes back in the queue this long. */
const ORIGIN_BUSY_RETRY_MS = 1_000;
/** A job for a callback whose origin is slow (still timing out a timeout after it began to) while slow origins have their share of workers: asks again no sooner. */
const SLOW_ORIGIN_RETRY_MS = 5_000;
/** A job whose dataset never shows up here (refused by this replica) is given up after this. */
const SNAPSHOT_LAG_GIVE_UP_MS = 5 * 60_000;
/** A job waiting for another delivery to the same subscription to end looks again after this. */
const CLAIMED_RETRY_MS = 500;

export interface DistributionDeps {
  readonly store: SubscriptionStore;
  readonly queue: JobQueue;
  readonly outbound: OutboundClient;
  readonly metrics: HubMetrics;
  readonly logger: Logger;
  readonly current: () => Snapshot | null;
  /** Delay before attempt n+1 after n consecutive failures (WEBSUB_RETRY_DELAYS_MS; [0] is the first attempt). */
  readonly retryDelaysMs: readonly number[];
  readonly now: () => number;
  /**
   * The dataset version the shared store designates now (the NATS pointer), when several replicas
   * announce: one that lags behind may swap to an older dataset after a newer one was announced, and
   * announces only what is still current. Not the publish time, which comes from the publisher's clock:
   * one publish stamped an hour ahead kept every later change from being announced for that hour.
   * Absent in a single process (standalone), which announces its snapshots in the order they arrive.
   */
  readonly currentVersion?: () => Promise<string | null>;
}

/**
 * Announce a snapshot: for each topic whose identity ETag differs from the last one announced,
 * queue one job per active subscription, then record the announcement. Runs on every replica after
 * every swap and at start (which covers changes made while no hub ran); replicas computing the same
 * change produce the same job ids, which the queue deduplicates, and the compare-and-set on the
 * topic state lets exactly one of them record it.
 */
export function announceSnapshot(snapshot: Snapshot, deps: DistributionDeps): Promise<void> {
  // Inside the dataset's receive span: the jobs carry its trace to whichever replica delivers them.
  return withSpan('websub announce', { kind: SpanKind.PRODUCER, attributes: { 'dataset.version': snapshot.version } }, () => announce(snapshot, deps));
}

async function announce(snapshot: Snapshot, deps: DistributionDeps): Promise<void> {
  const { store, queue, logger, now } = deps;
  const traceparent = activeTraceparent();
  const publishedAtMs = snapshot.publishedAt.getTime();
  // With a shared pointer, only what it names is announced: not a replica's fallback to an earlier
  // version while the pointer is refused or unreadable (null), nor a lagging replica's older one.
  const current = deps.currentVersion ? await deps.currentVersion() : snapshot.version;
  if (current !== snapshot.version) {
    logger.debug({ version: snapshot.version, current }, 'dataset superseded before it was announced; its successor will be');
    return;
  }
  for (const topic of TOPICS) {
    const etag = snapshot.topic(topic).identity.etag;
    for (;;) {
      const state = await store.topicState(topic);
      if (state?.etag === etag) break;
      const seq = (state?.seq ?? 0) + 1;
      const t = now();
      const subscribers = (await store.list()).filter((s) => s.topic === topic && isActive(s, t));
      await queue.enqueue(subscribers.map((s) => ({ subscriptionKey: s.key, topic, seq, etag, enqueuedAt: t, ...(traceparent ? { traceparent } : {}) })));
      const recorded = await store.updateTopicState(topic, (cur) => ((cur?.seq ?? 0) === seq - 1 ? { etag, seq, publishedAtMs } : undefined));
      if (recorded?.seq === seq && recorded.etag === etag) {
        logger.info({ topic, seq, version: snapshot.version, subscribers: subscribers.length }, 'topic change announced');
        break;
      }
    }
  }
}

/**
 * Queue again the notifications a previous run owed but may have lost with its in-process queue:
 * for each announced topic, one job for its current state per active subscription that has not
 * acknowledged that state's bytes. Subscriptions that were waiting out a retry delay get their next
 * attempt when it is due (their failure count and last attempt are in the store).
 */
export async function resumeUndelivered(deps: Pick<DistributionDeps, 'store' | 'queue' | 'logger' | 'now'>): Promise<void> {
  const { store, queue, logger, now } = deps;
  const t = now();
  const subscriptions = await store.list();
  let resumed = 0;
  for (const topic of TOPICS) {
    const state = await store.topicState(topic);
    if (!state) continue;
    const owed = subscriptions.filter((s) => s.topic === topic && isActive(s, t) && s.deliveredEtag !== state.etag);
    await queue.enqueue(owed.map((s) => ({ subscriptionKey: s.key, topic, seq: state.seq, etag: state.etag, enqueuedAt: t })));
    resumed += owed.length;
  }
  logger.info({ resumed }, 'undelivered notifications of the last run queued again');
}

/**
 * Run one delivery job: POST the topic's newest bytes to the subscription and apply the outcome.
 * 2xx resets the failure count, 410 removes at once, anything else counts a failure and is retried
 * after the configured delay; the third failure in a row sends a denial and removes it. A subscription
 * gets one notification at a time (its `delivering` claim) and none before its retry is due, whatever
 * job asks: the retry schedule and the order of changes are the subscription's, not a job's.
 */
export function runDeliveryJob(job: DeliveryJob, deps: DistributionDeps): Promise<JobOutcome> {
  const span = { kind: SpanKind.CONSUMER, parent: contextFromTraceparent(job.traceparent), attributes: { 'websub.topic': job.topic, 'websub.seq': job.seq } };
  return withSpan('websub deliver', span, () => deliver(job, deps));
}

/** When the subscription's next attempt is due after its consecutive failures (0: now). */
function nextAttemptDue(subscription: Subscription, retryDelaysMs: readonly number[]): number {
  if (subscription.failures === 0 || subscription.lastAttemptAt === null) return 0;
  return subscription.lastAttemptAt + (retryDelaysMs[Math.min(subscription.failures, retryDelaysMs.length - 1)] ?? 0);
}

/**
 * Whether another delivery holds the subscription at `t`. A claim for this job's own change is an
 * attempt of this job whose process died before releasing it: the queue hands a job out again only
 * once its holder stopped, so that claim is taken over, not waited out.
 */
function claimedByAnother(subscription: Subscription, job: DeliveryJob, t: number): boolean {
  const claim = subscription.delivering;
  return claim !== undefined && claim.until > t && !isOwnClaim(claim, job);
}

function isOwnClaim(claim: DeliveryClaim, job: DeliveryJob): boolean {
  return claim.seq === job.seq && claim.etag === job.etag;
}

/** The subscription without `claim`, if it still holds it. */
function released(subscription: Subscription, claim: DeliveryClaim): Subscription {
  if (subscription.delivering?.token !== claim.token) return subscription;
  const { delivering: _released, ...rest } = subscription;
  return rest;
}

/** The store change that gives `claim` up: the subscription without it if it still holds it, else no write. */
function releasing(claim: DeliveryClaim): Change<Subscription> {
  return (cur) => (cur?.delivering?.token === claim.token ? released(cur, claim) : undefined);
}

async function deliver(job: DeliveryJob, deps: DistributionDeps): Promise<JobOutcome> {
  const { store, outbound, metrics, logger, now } = deps;
  const done = { done: true } as const;
  // A replica still loading its first dataset (pods listen and take jobs meanwhile) can tell nothing
  // about a job: it neither sends it nor gives it up, and reads nothing for it.
  if (!deps.current()) return { retryInMs: NO_SNAPSHOT_RETRY_MS };
  const found = await store.get(job.subscriptionKey);
  if (!found) return done;
  if (!isActive(found, now())) {
    await store.update(job.subscriptionKey, (cur) => (cur && !isActive(cur, now()) ? null : undefined));
    return done;
  }
  // Leaving for good: a claim an earlier attempt of this job left behind goes too, so no other job waits it out.
  const stale = found.delivering !== undefined && isOwnClaim(found.delivering, job) ? found.delivering : null;
  const finished = async (): Promise<JobOutcome> => {
    if (stale) await store.update(found.key, releasing(stale));
    return done;
  };
  const state = await store.topicState(job.topic);
  // A newer change was announced: its own job sends the newest content.
  if (state && (state.seq > job.seq || (state.seq === job.seq && state.etag !== job.etag))) return finished();
  const snapshot = deps.current();
  if (!snapshot) return { retryInMs: NO_SNAPSHOT_RETRY_MS };
  const representation = snapshot.topic(job.topic);
  if (!representation || representation.identity.etag !== job.etag) {
    if (now() - job.enqueuedAt > SNAPSHOT_LAG_GIVE_UP_MS) {
      logger.warn({ subscription: job.subscriptionKey, topic: job.topic, seq: job.seq }, 'announced dataset never loaded here; job dropped');
      return finished();
    }
    return { retryInMs: SNAPSHOT_LAG_RETRY_MS };
  }
  const t = now();
  // A change announced while a failed notification waits for its retry waits with it.
  const due = nextAttemptDue(found, deps.retryDelaysMs);
  if (due > t) return { retryInMs: due - t };
  // Another notification is on its way to it: this one goes after, or not at all if that one was this content.
  if (claimedByAnother(found, job, t)) return { retryInMs: CLAIMED_RETRY_MS };
  if (found.deliveredEtag === job.etag) return finished();
  // Its callback's origin stopped answering in time and others like it hold their share of the workers: the
  // job goes back, with nothing written, rather than hold a worker everyone else's notifications need.
  if (!outbound.admits(found.callback)) {
    logger.debug({ subscription: found.key, topic: job.topic, seq: job.seq }, 'notification deferred: its callback origin keeps timing out and slow origins have their share of workers');
    return { retryInMs: SLOW_ORIGIN_RETRY_MS };
  }
  const claim: DeliveryClaim = { etag: job.etag, seq: job.seq, token: randomUUID(), until: t + DELIVERY_HOLD_MS };
  const subscription = await store.update(found.key, (cur) =>
    cur && cur.requestedAt === found.requestedAt && !claimedByAnother(cur, job, t) && cur.deliveredEtag !== job.etag && nextAttemptDue(cur, deps.retryDelaysMs) <= t ? { ...cur, delivering: claim } : undefined,
  );
  // Changed meanwhile (claimed by another job, renewed, notified, removed): look again, unless there is nothing left to send.
  if (subscription?.delivering?.token !== claim.token) return subscription && subscription.deliveredEtag !== job.etag ? { retryInMs: CLAIMED_RETRY_MS } : done;

  const body = representation.identity.body;
  const headers: Record<string, string> = {
    'content-type': representation.contentType,
    'content-length': String(body.length),
    link: topicLinkHeader(snapshot.urls, job.topic),
  };
  if (subscription.secret !== null) headers['x-hub-signature'] = `sha256=${createHmac('sha256', subscription.secret).update(body).digest('hex')}`;
  const started = performance.now();
  // §7: the subscriber's response body is ignored, so the outcome is its status alone.
  const result = await outbound.send({ method: 'POST', url: subscription.callback, headers, body, keepBodyBytes: 0 });
  metrics.deliveryDuration.observe({ topic: job.topic }, (performance.now() - started) / 1000);
  const attemptAt = now();
  const status = result.ok ? result.status : null;
  // Host[:port] only, never the callback's path or query: those may carry the subscriber's tokens.
  const callbackHost = new URL(subscription.callback).host;
  const log = { subscription: subscription.key, topic: job.topic, seq: job.seq, callbackHost, status, ...(result.ok ? {} : { reason: result.reason }) };

  if (result.ok && status !== null && status >= 200 && status <= 299) {
    metrics.deliveries.inc({ topic: job.topic, outcome: 'success' });
    await store.update(subscription.key, (cur) =>
      cur ? { ...released(cur, claim), failures: 0, deliveredEtag: job.etag, lastStatus: status, lastAttemptAt: attemptAt } : undefined,
    );
    logger.debug(log, 'notification delivered');
    return done;
  }
  if (!result.ok && result.reason === 'busy') {
    // Never sent: the hub's own connections to that origin were all taken. Not the subscriber's failure.
    await store.update(subscription.key, releasing(claim));
    logger.debug(log, 'notification deferred: every connection to the callback origin is busy');
    return { retryInMs: ORIGIN_BUSY_RETRY_MS };
  }
  if (status === 410) {
    metrics.deliveries.inc({ topic: job.topic, outcome: 'gone' });
    // Renewed meanwhile: a newer request than the one that answered 410 stands, without this claim.
    await store.update(subscription.key, (cur) => (cur?.requestedAt === subscription.requestedAt ? null : releasing(claim)(cur)));
    logger.info(log, 'subscriber answered 410 Gone; subscription removed');
    return done;
  }

  metrics.deliveries.inc({ topic: job.topic, outcome: 'failure' });
  const updated = await store.update(subscription.key, (cur) =>
    cur ? { ...released(cur, claim), failures: cur.failures + 1, lastStatus: status, lastAttemptAt: attemptAt } : undefined,
  );
  if (!updated) return done;
  if (updated.failures >= MAX_CONSECUTIVE_FAILURES) {
    if (await removeAfterFailures(updated, deps)) {
      logger.warn({ ...log, failures: updated.failures }, 'third consecutive failure; denial sent and subscription removed');
    } else {
      // Removed meanwhile (another replica's denial, an unsubscribe, a 410) or reset by a renewal or a success: nothing to act on.
      logger.info({ ...log, failures: updated.failures }, 'third consecutive failure; subscription already removed or changed meanwhile, no denial sent');
    }
    return done;
  }
  metrics.deliveryRetries.inc({ topic: job.topic });
  const retryInMs = Math.max(0, nextAttemptDue(updated, deps.retryDelaysMs) - attemptAt);
  // Warn: a subscriber failing is what an operator filtering on warn+ has to see (which host, how often).
  logger.warn({ ...log, failures: updated.failures, retryInMs }, 'notification failed; will retry');
  return { retryInMs };
}

/**
 * Remove the subscription and send the denial; false when this call removed nothing because it is
 * already gone or no longer failing. Only the call that removes it denies, so a subscriber gets one
 * denial however many replicas see its third failure, and none after it unsubscribed or recovered.
 */
async function removeAfterFailures(subscription: Subscription, deps: DistributionDeps): Promise<boolean> {
  let removedHere = false;
  // Remove first: the denial is best effort and must not be able to keep the subscription alive.
  // The store returns null whether this change deleted it or it was gone already; the change run
  // last (it may run again after a lost compare-and-set) is the one applied, so it tells which.
  await deps.store.update(subscription.key, (cur) => {
    removedHere = cur !== null && cur.failures >= MAX_CONSECUTIVE_FAILURES;
    return removedHere ? null : undefined;
  });
  if (!removedHere) return false;
  deps.metrics.denials.inc({ reason: DENIAL_REASON });
  await sendDenial(subscription, DENIAL_REASON, deps.outbound);
  return true;
}

/**
 * Delete subscriptions whose lease has run out (they already receive nothing) and unsubscribe marks
 * no older request can outrun any more, so what unsubscribes leave behind stays bounded.
 */
export async function sweepExpired(deps: Pick<DistributionDeps, 'store' | 'logger' | 'now'>): Promise<number> {
  const t = deps.now();
  let swept = 0;
  for (const record of await deps.store.listRecords()) {
    if (!isDueForSweep(record, t)) continue;
    const after = await deps.store.updateRecord(record.key, (cur) => (cur && isDueForSweep(cur, deps.now()) ? null : undefined));
    if (after === null && isSubscription(record)) swept++;
  }
  if (swept > 0) deps.logger.info({ swept }, 'expired subscriptions removed');
  return swept;
}
