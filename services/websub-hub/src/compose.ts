import { constants } from 'node:fs';
import { access, mkdir } from 'node:fs/promises';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { currentDatasetVersion } from '@reviews/dataset-store';
import { ConfigError } from '@reviews/runtime';
import { createWebSubHub, DEFAULT_LIMITS, type HubConfig, type WebSubHub, type WebSubHubDeps } from './hub.js';
import { DELIVERY_HOLD_MS } from './outbound.js';
import { createMemoryJobQueue } from './queue/memory-queue.js';
import { createNatsJobQueue } from './queue/nats-queue.js';
import { openFileSubscriptionStore } from './store/file-store.js';
import { openNatsSubscriptionStore } from './store/nats-store.js';
import { recordLifetimeMs } from './subscription.js';

type HubBase = Omit<WebSubHubDeps, 'store' | 'queue'>;

/** How many deliveries one hub process runs at once, whichever queue feeds them. */
function deliveryConcurrency(deps: HubBase): number {
  return deps.limits?.deliveryConcurrency ?? DEFAULT_LIMITS.deliveryConcurrency;
}

/**
 * Unwritable, DATA_DIR would fail every subscription after its verification, one error log at a time:
 * refused at start instead, naming the variable.
 */
async function writableDataDir(dir: string): Promise<void> {
  try {
    await mkdir(dir, { recursive: true });
    await access(dir, constants.W_OK);
  } catch (error) {
    throw new ConfigError([`DATA_DIR: ${dir} cannot hold the WebSub subscriptions (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); give a directory this process can write`]);
  }
}

/** Standalone (no NATS): subscriptions in `DATA_DIR/websub-subscriptions.json`, jobs in process. */
export async function createStandaloneWebSubHub(deps: HubBase & { readonly config: HubConfig & { readonly DATA_DIR: string } }): Promise<WebSubHub> {
  await writableDataDir(deps.config.DATA_DIR);
  const store = await openFileSubscriptionStore(deps.config.DATA_DIR);
  const queue = createMemoryJobQueue({ concurrency: deliveryConcurrency(deps), logger: deps.logger });
  const hub = createWebSubHub({ ...deps, store, queue });
  return {
    ...hub,
    close: async () => {
      await hub.close();
      await store.close();
    },
  };
}

export interface NatsHubOptions {
  /** The caller's connection; the hub never closes it. */
  readonly nc: NatsConnection;
  /** How long a delivery job stays with a replica before another one may take it; DELIVERY_HOLD_MS unless a test shortens it. */
  readonly ackWaitMs?: number;
  /** NATS_REPLICAS: stream replicas of the hub's bucket and work queue, if this process creates them. */
  readonly replicas?: number;
}

/** Pods: subscriptions in the `websub-subscriptions` KV bucket, jobs in the shared `WEBSUB_DELIVERIES` work queue. */
export async function createNatsWebSubHub(deps: HubBase & NatsHubOptions): Promise<WebSubHub> {
  const js = jetstream(deps.nc, { timeout: 5_000 });
  const jsm = await jetstreamManager(deps.nc, { timeout: 5_000 });
  const store = await openNatsSubscriptionStore(js, { logger: deps.logger, replicas: deps.replicas ?? 1, keepWritesMs: recordLifetimeMs(deps.config.WEBSUB_LEASE_MAX_SECONDS) });
  const queue = await createNatsJobQueue({
    js,
    jsm,
    concurrency: deliveryConcurrency(deps),
    ackWaitMs: deps.ackWaitMs ?? DELIVERY_HOLD_MS,
    replicas: deps.replicas ?? 1,
    logger: deps.logger,
  });
  const { nc: _nc, ackWaitMs: _ackWaitMs, replicas: _replicas, ...hubDeps } = deps;
  return createWebSubHub({ ...hubDeps, store, queue, storeUnavailable: disconnection(deps.nc), currentVersion: currentDatasetVersion(deps.nc) });
}

/** Null while `nc` is connected, else why not; followed from its status events. */
function disconnection(nc: NatsConnection): () => string | null {
  let reason: string | null = null;
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === 'disconnect') reason = `NATS disconnected from ${status.server}; reconnecting`;
      else if (status.type === 'reconnect') reason = null;
    }
  })();
  return () => (nc.isClosed() ? 'its NATS connection is closed' : reason);
}
