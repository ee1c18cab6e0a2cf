import type { NatsConnection } from '@nats-io/transport-node';
import { connectServiceNats, type PodApp, type PodContext } from '@reviews/dataset-store';
import { displayedServers, observeRequest, READ_AND_POST_METHODS, wakeablePause, type NatsAccess } from '@reviews/runtime';
import { createNatsWebSubHub } from './compose.js';
import { HUB_ROUTE, HUB_SERVICE, hubPodHandler, type WebSubHub } from './hub.js';
import { createUnavailableHubHandler } from './http-handler.js';
import { createHubMetrics } from './metrics.js';

/** The pause between attempts to open the hub's state. */
const RETRY_DELAY_MS = 2_000;
/** While it keeps failing, one warning per this many attempts (about a minute), not one every 2 s. */
const WARN_EVERY_ATTEMPTS = 30;

/**
 * websub-hub as a pod runs it: subscriptions and delivery work in NATS JetStream, shared by every
 * replica. That state is opened in the background, so the pod serves /healthz, /readyz and /metrics
 * from its first second whether NATS is down, JetStream off or the credentials refused (a restart
 * loop would only delay the recovery), and retries until it opens. Until then /readyz is 503 saying
 * why, and subscription requests get 503 with Retry-After.
 */
export function natsHubPod({ config, logger, metrics, snapshots }: PodContext, nats: NatsAccess): PodApp {
  let nc: NatsConnection | null = null;
  let hub: WebSubHub | null = null;
  let started = false;
  let problem = `connecting to NATS at ${displayedServers(nats)}`;
  let closed = false;
  const retryWait = wakeablePause();
  // Registered before NATS is reached: a pod started during an outage exports every websub_* series and
  // counts the requests it refuses, as one that lost NATS later does. The gauges keep 0 until there is a store.
  const notOpened = () => Promise.reject(new Error(problem));
  const hubMetrics = createHubMetrics(metrics, {
    subscriptionCounts: () => hub?.gauges.subscriptionCounts() ?? notOpened(),
    queueDepth: () => hub?.gauges.queueDepth() ?? notOpened(),
  });

  const opening = (async () => {
    for (let attempt = 1; !closed; attempt++) {
      try {
        // A connection NATS closed for good (credentials revoked) is replaced while nothing uses it yet.
        if (hub === null && nc?.isClosed()) nc = null;
        nc ??= await connectServiceNats(nats, HUB_SERVICE);
        if (closed) return;
        // Created once. Opening the bucket and the work queue comes first and is retried whole.
        hub ??= await createNatsWebSubHub({ config, logger, metrics, hubMetrics, snapshots, nc, replicas: config.NATS_REPLICAS });
        if (closed) return;
        await hub.start();
        started = true;
        if (attempt > 1) logger.info({ attempt }, 'websub-hub opened its state in NATS; accepting subscriptions');
        return;
      } catch (error) {
        problem = `cannot open its state in NATS at ${displayedServers(nats)} (attempt ${attempt}): ${(error as Error).message}`;
        if (attempt % WARN_EVERY_ATTEMPTS === 1) logger.warn({ err: error, attempt }, 'websub-hub cannot open its state in NATS; retrying, subscription requests get 503 meanwhile');
        await retryWait.pause(RETRY_DELAY_MS);
      }
    }
  })();

  const unavailable = createUnavailableHubHandler(() => problem, hubMetrics);
  return {
    handler: hubPodHandler(
      {
        handler: (req, res) => {
          if (started) return hub!.handler(req, res);
          observeRequest(metrics, HUB_SERVICE, req, res, HUB_ROUTE, logger);
          unavailable(req, res);
        },
      },
      { metrics, logger },
    ),
    allow: READ_AND_POST_METHODS,
    readiness: (dataset) => (started ? dataset : { ...dataset, ready: false, source: { ...dataset.source, detail: `${dataset.source.detail}; websub-hub ${problem}` } }),
    stopTakingWork: () => {
      closed = true;
      retryWait.wake();
      hub?.stopTakingWork();
    },
    close: async () => {
      await opening;
      await hub?.close();
      if (nc !== null && !nc.isClosed()) await nc.drain();
    },
  };
}
