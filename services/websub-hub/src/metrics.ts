import { TOPICS } from '@reviews/domain';
import { Counter, Gauge, Histogram, type Metrics } from '@reviews/runtime';
import { DENIAL_REASON } from './distribution.js';
import { VERIFICATION_OUTCOMES } from './verification.js';

export interface HubMetrics {
  readonly subscriptions: Gauge<'state'>;
  readonly verifications: Counter<'mode' | 'outcome'>;
  readonly deliveries: Counter<'topic' | 'outcome'>;
  readonly deliveryDuration: Histogram<'topic'>;
  readonly deliveryRetries: Counter<'topic'>;
  readonly denials: Counter<'reason'>;
  readonly queueDepth: Gauge;
  readonly requests: Counter<'mode' | 'outcome'>;
}

/**
 * How long a scrape waits for the store's counts: while NATS hangs, its requests time out only after
 * 5 s, and a scrape of every other series must not wait for them (the gauges keep their last values).
 */
const GAUGE_WAIT_MS = 1_000;

/** The value, or null when it fails or does not come within `ms`. */
function within<T>(value: Promise<T>, ms: number): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), ms)));
  return Promise.race([value.catch(() => null), late]).finally(() => clearTimeout(timer));
}

const SUBSCRIPTION_STATES = ['active', 'expired', 'pending'] as const;
/** Subscriptions by state: active, expired (not swept yet), pending (verifications in flight here). */
export type SubscriptionCounts = Record<(typeof SUBSCRIPTION_STATES)[number], number>;

export interface HubGauges {
  subscriptionCounts(): Promise<SubscriptionCounts>;
  queueDepth(): Promise<number>;
}

/**
 * The hub endpoint's answers by mode (`none` before the form is read): each starts at 0, since a
 * dashboard's first subscriptions and an outage's first refusal were lost to rate() otherwise.
 */
const REQUEST_OUTCOMES: ReadonlyArray<readonly [string, readonly string[]]> = [
  ['subscribe', ['accepted', 'rejected', 'rate_limited', 'unavailable', 'full', 'overloaded']],
  ['unsubscribe', ['accepted', 'rejected', 'rate_limited', 'unavailable', 'overloaded']],
  // `unavailable`: a pod that has not opened its state in NATS yet refuses every request unread.
  ['none', ['rejected', 'rate_limited', 'unsupported_media_type', 'method_not_allowed', 'unavailable']],
  // hub.mode=publish (the hub publishes its own topics) and a missing, repeated or unknown hub.mode: refused, named apart.
  ['publish', ['rejected']],
  ['invalid', ['rejected']],
];

/** The hub's metrics, registered on the process registry. No callback URL ever becomes a label. */
export function createHubMetrics({ registry }: Metrics, gauges: HubGauges): HubMetrics {
  const metrics: HubMetrics = {
    subscriptions: new Gauge({
      name: 'websub_subscriptions',
      help: 'WebSub subscriptions by state (active, expired but not yet swept, pending verification in this process).',
      labelNames: ['state'] as const,
      registers: [registry],
      // The counts come from the subscription store (NATS in pods). When it cannot be read, the gauge
      // keeps its last values instead of failing the whole scrape: a NATS outage must leave
      // nats_connected visible at 0, not take every hub series down with a 500.
      async collect() {
        const counts = await within(gauges.subscriptionCounts(), GAUGE_WAIT_MS);
        if (counts !== null) for (const [state, count] of Object.entries(counts)) this.set({ state }, count);
      },
    }),
    verifications: new Counter({
      name: 'websub_verifications_total',
      help: `Verifications of intent by mode and outcome (${VERIFICATION_OUTCOMES.join(', ')}).`,
      labelNames: ['mode', 'outcome'] as const,
      registers: [registry],
    }),
    deliveries: new Counter({
      name: 'websub_deliveries_total',
      help: 'Notification attempts by topic and outcome (success, gone, failure).',
      labelNames: ['topic', 'outcome'] as const,
      registers: [registry],
    }),
    deliveryDuration: new Histogram({
      name: 'websub_delivery_duration_seconds',
      help: 'Duration of one notification POST, by topic.',
      labelNames: ['topic'] as const,
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15],
      registers: [registry],
    }),
    deliveryRetries: new Counter({
      name: 'websub_delivery_retries_total',
      help: 'Failed notifications scheduled for another attempt, by topic.',
      labelNames: ['topic'] as const,
      registers: [registry],
    }),
    denials: new Counter({
      name: 'websub_denials_total',
      help: 'Subscriptions removed with a hub.mode=denied notice, by reason.',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
    queueDepth: new Gauge({
      name: 'websub_queue_depth',
      help: 'Delivery jobs waiting or running.',
      registers: [registry],
      async collect() {
        const depth = await within(gauges.queueDepth(), GAUGE_WAIT_MS);
        if (depth !== null) this.set(depth);
      },
    }),
    requests: new Counter({
      name: 'websub_requests_total',
      help: 'Requests to the hub endpoint by mode and outcome (accepted, rejected, rate_limited, overloaded, full, unavailable, unsupported_media_type, method_not_allowed).',
      labelNames: ['mode', 'outcome'] as const,
      registers: [registry],
    }),
  };
  // Every series an alert or a panel takes increase() or rate() of exists from the start at 0: a counter
  // first seen at 1 has no increase to show, so a pod's first retry, denial or timed-out verification
  // would go unnoticed (the observability audit saw 4 verification timeouts drawn as none).
  for (const topic of TOPICS) {
    metrics.deliveryDuration.zero({ topic });
    metrics.deliveryRetries.inc({ topic }, 0);
    for (const outcome of ['success', 'gone', 'failure']) metrics.deliveries.inc({ topic, outcome }, 0);
  }
  for (const mode of ['subscribe', 'unsubscribe']) for (const outcome of VERIFICATION_OUTCOMES) metrics.verifications.inc({ mode, outcome }, 0);
  metrics.denials.inc({ reason: DENIAL_REASON }, 0);
  // Until the store is first read (a pod started while NATS is down): a panel or a query shows 0, not no data.
  for (const state of SUBSCRIPTION_STATES) metrics.subscriptions.set({ state }, 0);
  for (const [mode, outcomes] of REQUEST_OUTCOMES) for (const outcome of outcomes) metrics.requests.inc({ mode, outcome }, 0);
  return metrics;
}
