import { randomBytes } from 'node:crypto';
import { SpanKind, withSpan, type Logger } from '@reviews/runtime';
import { withHubParams } from './callback-url.js';
import type { HubRequest } from './hub-request.js';
import type { HubMetrics } from './metrics.js';
import type { OutboundClient } from './outbound.js';
import type { SubscriptionStore } from './store/subscription-store.js';
import { grantLease, isSubscription, subscriptionKey, type LeaseBounds, type Subscription, type SubscriptionRecord } from './subscription.js';

/** A verification body longer than this cannot be the 43-character challenge. */
const MAX_VERIFICATION_BODY_BYTES = 1024;
/**
 * A verified request that would take effect later than this after it was made changes nothing (the
 * subscriber asks again). The callback has 15 s to answer (the outbound total timeout), so only a
 * store stuck for minutes gets here; the deadline bounds how long an unsubscribe mark has to stay.
 */
export const VERIFICATION_DEADLINE_MS = 5 * 60_000;
/**
 * When the handshake must go out by, after its request: the GET may take 15 s after waiting up to 10 s for
 * a connection to a slow origin (the outbound timeouts), and the writes after it need their time too. A
 * handshake sent later could be confirmed by the subscriber and then not recorded, past the deadline.
 */
const SEND_BY_MS = VERIFICATION_DEADLINE_MS - 60_000;
/**
 * Pauses between attempts of a store operation that failed (NATS restarting or hung): the hub answered
 * 202, and the subscriber may have confirmed, so it keeps trying until the request's deadline.
 */
const STORE_RETRY_DELAYS_MS = [250, 500, 1_000, 2_000, 5_000];
/** Replicas order requests by their own clocks, which may disagree by this much. */
const CLOCK_SKEW_MS = 60_000;
/** How long an unsubscribe mark stays after its request: past every older request's deadline, on any replica's clock. */
export const UNSUBSCRIBE_MARK_MS = VERIFICATION_DEADLINE_MS + CLOCK_SKEW_MS;

export interface VerificationDeps {
  readonly store: SubscriptionStore;
  readonly outbound: OutboundClient;
  readonly metrics: HubMetrics;
  readonly logger: Logger;
  readonly lease: LeaseBounds;
  readonly now: () => number;
  /** True once the hub is closing: a failed write is not retried then (the close waits for verifications in flight). */
  readonly closing: () => boolean;
}

/** A request whose store operation failed as the hub was closing: logged as not recorded, not as a crash. */
export class StoppedBeforeRecorded extends Error {}

/** `store_unavailable`: never sent, the subscription store could not be read in time to verify before the request's deadline. */
export const VERIFICATION_OUTCOMES = ['verified', 'wrong_status', 'wrong_body', 'blocked', 'timeout', 'tls', 'network', 'busy', 'store_unavailable'] as const;
export type VerificationOutcome = (typeof VERIFICATION_OUTCOMES)[number];

/**
 * Verification of intent (W3C WebSub §5.3): GET the callback with a fresh single-use challenge and
 * apply the request only if the callback echoes it with a 2xx. Until then, and whenever it fails,
 * the stored state stays exactly as it was: a renewal, a new (or removed) secret and an
 * unsubscribe all take effect only once verified, and only if no newer request took effect first.
 */
export function verifyIntent(request: HubRequest, requestedAt: number, deps: VerificationDeps): Promise<VerificationOutcome> {
  const attributes = { 'websub.mode': request.mode, 'websub.topic': request.topic };
  return withSpan('websub verify', { kind: SpanKind.CLIENT, attributes }, async (span) => {
    const outcome = await verify(request, requestedAt, deps);
    span.setAttribute('websub.outcome', outcome);
    return outcome;
  });
}

async function verify(request: HubRequest, requestedAt: number, deps: VerificationDeps): Promise<VerificationOutcome> {
  const { store, outbound, metrics, logger, now } = deps;
  const key = subscriptionKey(request.topicUrl, request.callback);
  const about = { subscription: key, topic: request.topic, mode: request.mode, callbackHost: request.callbackHost };
  // A hung NATS reads as connected for up to ~30 s, so requests are accepted meanwhile: the
  // read is retried like the writes, and the request given up once too late to verify it.
  let existing: Subscription | null;
  try {
    existing = await retriedUntilDeadline(() => store.get(key), requestedAt, SEND_BY_MS, deps, about, {
      retrying: "reading the subscription before its verification failed; retrying until the request's deadline",
      stopping: 'verification not sent: the store failed as the hub was stopping; the subscriber must ask again',
    });
    if (now() - requestedAt > SEND_BY_MS) throw new Error('the subscription was read too late to verify the request before its deadline');
  } catch (error) {
    if (error instanceof StoppedBeforeRecorded) throw error;
    const outcome = 'store_unavailable';
    metrics.verifications.inc({ mode: request.mode, outcome });
    logger.error({ ...about, outcome, err: error }, "verification given up: the subscription store did not answer in time to verify the request before its deadline; subscription state unchanged, the subscriber must ask again");
    return outcome;
  }
  const verifiedAt = now();
  const leaseSeconds =
    request.mode === 'subscribe'
      ? grantLease(request.leaseSeconds, deps.lease)
      : // The lease an unsubscribe ends: what is left of the current one (0 when there is none).
        existing
        ? Math.max(0, Math.ceil((existing.expiresAt - verifiedAt) / 1000))
        : 0;
  const challenge = randomBytes(32).toString('base64url');
  const url = withHubParams(request.callback, {
    'hub.mode': request.mode,
    'hub.topic': request.requestedTopicUrl,
    'hub.challenge': challenge,
    'hub.lease_seconds': String(leaseSeconds),
  });
  const result = await outbound.send({ method: 'GET', url, keepBodyBytes: MAX_VERIFICATION_BODY_BYTES });
  const outcome: VerificationOutcome = !result.ok
    ? result.reason
    : result.status < 200 || result.status > 299
      ? 'wrong_status'
      : !result.truncated && result.body.equals(Buffer.from(challenge, 'utf8'))
        ? 'verified'
        : 'wrong_body';
  metrics.verifications.inc({ mode: request.mode, outcome });
  const log = { ...about, outcome };
  if (outcome !== 'verified') {
    logger.info({ ...log, ...(result.ok ? { status: result.status } : { detail: result.detail }) }, 'verification failed; subscription state unchanged');
    return outcome;
  }

  /** A store operation of recording the verified request: each is a compare-and-set that may run twice. */
  const recording = <T>(operation: () => Promise<T>): Promise<T> =>
    retriedUntilDeadline(operation, requestedAt, VERIFICATION_DEADLINE_MS, deps, log, {
      retrying: 'recording a verified request failed; retrying until its deadline',
      stopping: 'verified request not recorded: the store failed as the hub was stopping; the subscriber must ask again',
    });

  // A request newer than this one may have taken effect meanwhile (its subscription, or the mark its
  // unsubscribe left); it wins. Past the deadline that mark may be swept already, so nothing is
  // applied. The change run last (it may run again after a lost compare-and-set) tells which it was.
  // A write that failed may have landed all the same (NATS answering too late): its retry finds this
  // request's own subscription, which deliveries may have updated since (a failure counted), and
  // keeps it. (An unsubscribe's mark is the same whenever it is written. A subscription a 410 removed
  // meanwhile is gone without a trace, so the retry writes it again; its next notification's 410
  // removes it once more.)
  let tookEffect = false;
  const unlessSuperseded = (current: SubscriptionRecord | null, next: () => SubscriptionRecord): SubscriptionRecord | undefined => {
    if (current !== null && isSubscription(current) && current.requestedAt === requestedAt && current.verifiedAt === verifiedAt) {
      tookEffect = true;
      return undefined;
    }
    tookEffect = (current === null || current.requestedAt <= requestedAt) && now() - requestedAt <= VERIFICATION_DEADLINE_MS;
    return tookEffect ? next() : undefined;
  };
  if (request.mode === 'unsubscribe') {
    await recording(() => store.updateRecord(key, (current) => unlessSuperseded(current, () => ({ key, unsubscribed: true, requestedAt, forgetAt: requestedAt + UNSUBSCRIBE_MARK_MS }))));
  } else {
    // A new subscription starts as if notified of the content announced before it existed: otherwise
    // a restart (resumeUndelivered) would send it a change made before it subscribed.
    const announced = await recording(() => store.topicState(request.topic));
    await recording(() =>
      store.updateRecord(key, (current) =>
        unlessSuperseded(current, () => {
          const renewed = current !== null && isSubscription(current) ? current : null;
          return {
            key,
            topic: request.topic,
            topicUrl: request.requestedTopicUrl,
            callback: request.callback,
            secret: request.secret,
            leaseSeconds,
            verifiedAt,
            expiresAt: verifiedAt + leaseSeconds * 1000,
            requestedAt,
            failures: 0,
            // A renewal keeps its own: a job for the announced change may still be on its way to it.
            deliveredEtag: renewed ? renewed.deliveredEtag : (announced?.etag ?? null),
            lastStatus: renewed?.lastStatus ?? null,
            lastAttemptAt: renewed?.lastAttemptAt ?? null,
            ...(renewed?.delivering ? { delivering: renewed.delivering } : {}),
          };
        }),
      ),
    );
  }
  const applied = request.mode === 'subscribe' ? 'subscription verified' : 'unsubscription verified';
  logger.info({ ...log, leaseSeconds }, tookEffect ? applied : 'verified, but a newer request took effect first or the deadline passed; subscription state unchanged');
  return outcome;
}

/**
 * A store operation of the request made at `requestedAt`, tried again while its deadline allows: past
 * it the last error is thrown; once the hub is closing, StoppedBeforeRecorded (the close waits for
 * verifications in flight). The first failure is logged at warn as `lines.retrying`.
 */
async function retriedUntilDeadline<T>(
  operation: () => Promise<T>,
  requestedAt: number,
  deadlineMs: number,
  { logger, now, closing }: VerificationDeps,
  log: Record<string, unknown>,
  lines: { readonly retrying: string; readonly stopping: string },
): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await operation();
    } catch (error) {
      const pause = STORE_RETRY_DELAYS_MS[Math.min(attempt, STORE_RETRY_DELAYS_MS.length - 1)]!;
      if (closing()) {
        logger.warn({ ...log, err: error }, lines.stopping);
        throw new StoppedBeforeRecorded();
      }
      if (now() + pause - requestedAt > deadlineMs) throw error;
      if (attempt === 0) logger.warn({ ...log, err: error }, lines.retrying);
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}

/**
 * Tell a subscriber its subscription is gone (§5.2 denial), best effort, no retry: the hub policy
 * for "3 consecutive delivery failures" that keeps §7's promise of not dropping subscribers silently.
 */
export async function sendDenial(subscription: Subscription, reason: string, outbound: OutboundClient): Promise<void> {
  const url = withHubParams(subscription.callback, { 'hub.mode': 'denied', 'hub.topic': subscription.topicUrl, 'hub.reason': reason });
  await outbound.send({ method: 'GET', url, keepBodyBytes: 0 });
}
