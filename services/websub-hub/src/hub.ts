import { PATHS, publicUrls, TOPICS, type TopicName } from '@reviews/domain';
import type { SnapshotFollower } from '@reviews/dataset-store';
import { composeRoutes, createRateLimiter, inRequestSpan, observeRequest, sendNotFound, UNMATCHED_ROUTE, type Config, type Logger, type Metrics, type RateDecision, type RateLimit, type RequestHandler } from '@reviews/runtime';
import { announceSnapshot, resumeUndelivered, runDeliveryJob, sweepExpired, type DistributionDeps } from './distribution.js';
import type { HubRequest } from './hub-request.js';
import { createHubHandler } from './http-handler.js';
import { createHubMetrics, type HubGauges, type HubMetrics, type SubscriptionCounts } from './metrics.js';
import { createOutboundClient, type OutboundOptions } from './outbound.js';
import { outageLog } from './outage-log.js';
import type { JobQueue } from './queue/job-queue.js';
import type { SubscriptionStore } from './store/subscription-store.js';
import { isActive, subscriptionKey } from './subscription.js';
import { createTopicIndex } from './topic-index.js';
import { StoppedBeforeRecorded, verifyIntent } from './verification.js';

export type HubConfig = Pick<
  Config,
  | 'BASE_URL'
  | 'WEBSUB_ALLOW_PRIVATE_CALLBACKS'
  | 'WEBSUB_LEASE_DEFAULT_SECONDS'
  | 'WEBSUB_LEASE_MIN_SECONDS'
  | 'WEBSUB_LEASE_MAX_SECONDS'
  | 'WEBSUB_RETRY_DELAYS_MS'
  | 'WEBSUB_TRUSTED_PROXY_HOPS'
  | 'WEBSUB_MAX_SUBSCRIPTIONS'
>;

/** How long the subscription count behind WEBSUB_MAX_SUBSCRIPTIONS is taken as read. */
const RECORD_COUNT_TTL_MS = 10_000;

/** Abuse and load bounds of one hub process. */
export interface HubLimits {
  readonly perClient: RateLimit;
  /** Per client and callback host: one client's requests for a host never spend another's budget for it. */
  readonly perCallbackHost: RateLimit;
  /** Per callback host, all clients together: bounds the verification GETs the hub sends one host. */
  readonly perCallbackHostTotal: RateLimit;
  readonly maxPendingVerifications: number;
  readonly deliveryConcurrency: number;
  readonly sweepIntervalMs: number;
}

export const DEFAULT_LIMITS: HubLimits = {
  perClient: { burst: 30, perMinute: 60 },
  perCallbackHost: { burst: 20, perMinute: 30 },
  // Above what one client may send (perClient), so no single address can shut a host's subscribers out.
  perCallbackHostTotal: { burst: 100, perMinute: 300 },
  maxPendingVerifications: 500,
  deliveryConcurrency: 64,
  sweepIntervalMs: 60_000,
};

/** A client's budget for a callback host first, then the host's budget across clients. */
function limitPerClientAndHost(perClientAndHost: (key: string) => RateDecision, perHost: (key: string) => RateDecision): (client: string, host: string) => RateDecision {
  return (client, host) => {
    const own = perClientAndHost(`${client} ${host}`);
    return own.allowed ? perHost(host) : own;
  };
}

/** The `service` label of the hub's metrics and the route template of its one endpoint. */
export const HUB_SERVICE = 'websub-hub';
export const HUB_ROUTE = PATHS.hub;

/** An announcement that failed (NATS unreachable) is tried again after this, with the newest snapshot. */
const ANNOUNCE_RETRY_MS = 5_000;

export interface WebSubHubDeps {
  readonly config: HubConfig;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /**
   * The hub's own series, registered by a caller that exports them before it can make the hub (a pod
   * opening its state in NATS counts its refusals meanwhile) and reads `gauges` for them; else registered here.
   */
  readonly hubMetrics?: HubMetrics;
  readonly snapshots: Pick<SnapshotFollower, 'current' | 'onSwap'>;
  readonly store: SubscriptionStore;
  readonly queue: JobQueue;
  /** For the client of callbacks: its timeouts, extra CA certificates (PEM) to trust, and in tests the resolver of their host names. */
  readonly outbound?: Pick<OutboundOptions, 'timeouts' | 'tls' | 'resolver'>;
  readonly limits?: Partial<HubLimits>;
  /** Why `store` cannot be reached now (NATS disconnected), or null; absent: always reachable (a file). */
  readonly storeUnavailable?: () => string | null;
  /** When several hub replicas share `store` and `queue` (NATS): the version the dataset pointer designates now; see DistributionDeps. */
  readonly currentVersion?: () => Promise<string | null>;
}

export interface WebSubHub {
  /** Serves `/api/websub/hub` (route the exact path to it). */
  readonly handler: RequestHandler;
  /** What the websub_subscriptions and websub_queue_depth gauges read. */
  readonly gauges: HubGauges;
  /** Follow dataset changes, announce the current one, start delivering and sweeping; may be called again after it failed. */
  start(): Promise<void>;
  /**
   * Start no new work: no announcement, sweep or delivery job. Called when shutdown begins, while the
   * requests in flight drain (each still gets its verification); deliveries under way go on.
   */
  stopTakingWork(): void;
  /** Stop taking work; waits for verifications and deliveries in flight. The store stays open (caller owns it). */
  close(): Promise<void>;
}

/**
 * The WebSub hub (spec §3, §4.7, §6; design §6): subscription endpoint, verification of intent,
 * distribution of the three topics on every dataset change, retries, denial and lease expiry.
 * Storage and work queue are injected: file + in-process in standalone, NATS JetStream in pods.
 */
export function createWebSubHub(deps: WebSubHubDeps): WebSubHub {
  const { config, logger, store, queue, snapshots } = deps;
  const limits = { ...DEFAULT_LIMITS, ...deps.limits };
  const now = Date.now;
  const urls = publicUrls(config.BASE_URL);
  const pending = new Set<Promise<unknown>>();
  let takingWork = true;
  let closed = false;
  let unsubscribe: (() => void) | null = null;
  let sweeper: NodeJS.Timeout | null = null;
  let sweeping: Promise<void> | null = null;
  const sweepHealth = outageLog(logger, 'sweeping expired subscriptions');
  let retryTimer: NodeJS.Timeout | null = null;
  let announcing: Promise<void> = Promise.resolve();
  // A queue that forgets its jobs at close or crash may have left notifications undelivered.
  let mustResume = !queue.keepsJobsAcrossRestarts;
  const outbound = createOutboundClient({
    allowPrivateAddresses: config.WEBSUB_ALLOW_PRIVATE_CALLBACKS,
    userAgent: `reviews-websub-hub/1.0 (+${urls.hub})`,
    ...deps.outbound,
  });
  const countSubscriptions = async (): Promise<SubscriptionCounts> => {
    const t = now();
    const all = await store.list();
    const active = all.filter((s) => isActive(s, t)).length;
    return { active, expired: all.length - active, pending: pending.size };
  };
  // Scrapes that arrive together (a Prometheus pair in high availability scrapes every target twice) share one listing of the store.
  let counting: Promise<SubscriptionCounts> | null = null;
  const gauges: HubGauges = {
    subscriptionCounts: () =>
      (counting ??= countSubscriptions().finally(() => {
        counting = null;
      })),
    queueDepth: () => queue.depth(),
  };
  const metrics = deps.hubMetrics ?? createHubMetrics(deps.metrics, gauges);
  const distribution: DistributionDeps = {
    store,
    queue,
    outbound,
    metrics,
    logger,
    current: () => snapshots.current(),
    retryDelaysMs: config.WEBSUB_RETRY_DELAYS_MS,
    now,
    ...(deps.currentVersion ? { currentVersion: deps.currentVersion } : {}),
  };
  const verification = {
    store,
    outbound,
    metrics,
    logger,
    now,
    lease: { defaultSeconds: config.WEBSUB_LEASE_DEFAULT_SECONDS, minSeconds: config.WEBSUB_LEASE_MIN_SECONDS, maxSeconds: config.WEBSUB_LEASE_MAX_SECONDS },
    closing: () => closed,
  };

  /**
   * What WEBSUB_MAX_SUBSCRIPTIONS is checked against: the store's record count, read again in the
   * background at most every RECORD_COUNT_TTL_MS (in NATS a listing, ~100 ms at 3,000: too much for
   * every request), plus this replica's subscribe verifications in flight and those that ended since
   * that count began, renewals included. Other replicas' requests are not seen until a count reads
   * them: the cap may be passed by what they accept meanwhile.
   */
  let storedCount: { value: number; since: number } | null = null;
  let recounting: Promise<void> | null = null;
  let subscribesInFlight = 0;
  /** When each subscribe verification here ended, until a count that began after it is read. */
  let subscribesEnded: number[] = [];
  const recount = (): Promise<void> => {
    const since = now();
    return (recounting ??= store
      .listRecords()
      .then(({ length: value }) => {
        storedCount = { value, since };
        subscribesEnded = subscribesEnded.filter((at) => at >= since);
      })
      .finally(() => (recounting = null)));
  };
  /** The subscriptions counted against the cap; waits for a count only when there has never been one. */
  const countedSubscriptions = async (): Promise<number> => {
    if (storedCount === null) await recount();
    else if (now() - storedCount.since > RECORD_COUNT_TTL_MS) recount().catch((error: unknown) => logger.debug({ err: error }, 'counting subscriptions failed; keeping the last count'));
    return (storedCount?.value ?? 0) + subscribesInFlight + subscribesEnded.length;
  };

  const track = (work: Promise<unknown>): void => {
    pending.add(work);
    void work.finally(() => pending.delete(work));
  };

  const hubHandler = createHubHandler({
    policy: { topics: createTopicIndex(new Map(TOPICS.map((t): [string, TopicName] => [urls[t], t]))), allowPrivateCallbacks: config.WEBSUB_ALLOW_PRIVATE_CALLBACKS },
    metrics,
    logger,
    trustedProxyHops: config.WEBSUB_TRUSTED_PROXY_HOPS,
    limitClient: createRateLimiter(limits.perClient),
    limitCallbackHost: limitPerClientAndHost(createRateLimiter(limits.perCallbackHost), createRateLimiter(limits.perCallbackHostTotal)),
    canAcceptVerification: () => !closed && pending.size < limits.maxPendingVerifications,
    storeUnavailable: deps.storeUnavailable ?? (() => null),
    // Counted before a subscribe is accepted: every subscription is a notification per change, whoever asks.
    roomFor: async (request: HubRequest) => {
      const max = config.WEBSUB_MAX_SUBSCRIPTIONS;
      if ((await countedSubscriptions()) < max) return null;
      // At the cap a renewal still goes through: it adds nothing.
      if ((await store.get(subscriptionKey(request.topicUrl, request.callback))) !== null) return null;
      // One line per refusal would let anyone fill the log: websub_requests_total{outcome="full"} counts them.
      logger.debug({ max, topic: request.topic, callbackHost: request.callbackHost }, 'subscription refused: the hub holds its maximum (WEBSUB_MAX_SUBSCRIPTIONS)');
      return `The hub holds its maximum of ${max} subscriptions; retry later.`;
    },
    accept: (request: HubRequest, requestedAt: number) => {
      const subscribing = request.mode === 'subscribe';
      if (subscribing) subscribesInFlight++;
      track(
        verifyIntent(request, requestedAt, verification)
          .catch((error: unknown) => {
            if (!(error instanceof StoppedBeforeRecorded)) logger.error({ err: error, topic: request.topic }, 'verification crashed');
          })
          .finally(() => {
            if (!subscribing) return;
            subscribesInFlight--;
            subscribesEnded.push(now());
          }),
      );
    },
  });
  const handler: RequestHandler = (req, res) => {
    observeRequest(deps.metrics, HUB_SERVICE, req, res, HUB_ROUTE, logger);
    inRequestSpan(res, () => hubHandler(req, res));
  };

  // Announcements run one at a time, newest snapshot last; a failed one is retried with the then-current snapshot.
  const announce = (): void => {
    announcing = announcing.then(async () => {
      const snapshot = snapshots.current();
      if (!takingWork || !snapshot) return;
      try {
        // Only once there is a snapshot (a job that waits too long for its dataset is dropped), and before
        // announcing it: a change announced right after supersedes the resumed jobs with the newest bytes.
        if (mustResume) {
          await resumeUndelivered(distribution);
          mustResume = false;
        }
        await announceSnapshot(snapshot, distribution);
      } catch (error) {
        logger.error({ err: error, version: snapshot.version }, 'announcing a dataset change failed; retrying');
        if (takingWork && !retryTimer) {
          retryTimer = setTimeout(() => {
            retryTimer = null;
            announce();
          }, ANNOUNCE_RETRY_MS);
        }
      }
    });
  };

  const stopTakingWork = (): void => {
    takingWork = false;
    unsubscribe?.();
    if (sweeper) clearInterval(sweeper);
    if (retryTimer) clearTimeout(retryTimer);
    queue.stopTaking();
  };

  return {
    handler,
    gauges,
    async start() {
      // A start that failed (the work queue unreachable) may be called again: follow the snapshots once.
      unsubscribe ??= snapshots.onSwap(() => announce());
      announce();
      await announcing;
      await queue.start((job) => runDeliveryJob(job, distribution));
      sweeper = setInterval(() => {
        // One sweep at a time: while NATS is down a sweep can outlast the interval, and the outage
        // log must see failures and the recovery in the order they happen.
        if (sweeping) return;
        sweeping = sweepExpired(distribution)
          .then(() => sweepHealth.succeeded(), (error: unknown) => sweepHealth.failed(error))
          .finally(() => {
            sweeping = null;
          });
      }, limits.sweepIntervalMs);
      sweeper.unref();
    },
    stopTakingWork,
    async close() {
      stopTakingWork();
      closed = true;
      await announcing;
      await Promise.allSettled([...pending]);
      await queue.close();
      await outbound.close();
    },
  };
}

/**
 * What a hub pod serves on its port: the hub endpoint, and a 404 for every other path, recorded as
 * `unmatched` like the other services' unknown paths.
 */
export function hubPodHandler(hub: Pick<WebSubHub, 'handler'>, { metrics, logger }: { readonly metrics: Metrics; readonly logger: Logger }): RequestHandler {
  return composeRoutes({ [HUB_ROUTE]: hub.handler }, (req, res) => {
    observeRequest(metrics, HUB_SERVICE, req, res, UNMATCHED_ROUTE, logger);
    sendNotFound(res);
  });
}
