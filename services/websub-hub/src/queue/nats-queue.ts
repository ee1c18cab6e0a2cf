import { headers as natsHeaders, nanos, type MsgHdrs } from '@nats-io/transport-node';
import {
  AckPolicy,
  DeliverPolicy,
  RetentionPolicy,
  StorageType,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
} from '@nats-io/jetstream';
import { wakeablePause, type Logger } from '@reviews/runtime';
import { notFound, remakingWhenGone } from '../jetstream-loss.js';
import { outageLog } from '../outage-log.js';
import { CRASHED_JOB_RETRY_MS, jobId, type DeliveryJob, type JobHandler, type JobQueue } from './job-queue.js';

export const DELIVERY_STREAM = 'WEBSUB_DELIVERIES';
export const DELIVERY_SUBJECT = 'websub.deliveries';
/** ONE durable pull consumer shared by every hub replica: each job goes to exactly one of them. */
export const DELIVERY_CONSUMER = 'websub-hub-delivery';
/** Replicas enqueue the same change concurrently; Nats-Msg-Id dedupe within this window makes it once. */
const DUPLICATE_WINDOW_MS = 10 * 60_000;
const JOB_MAX_AGE_MS = 7 * 24 * 3600_000;
/**
 * Jobs are pulled in bounded batches (fetch), not with a standing pull: a stopping replica keeps
 * its subscription until its last request ends, so every job the server hands it is either run or
 * released (nak) — none is lost in flight until its ack deadline. Bounds the wait at shutdown.
 */
const FETCH_EXPIRES_MS = 1_000;
/** After a failed fetch (NATS reconnecting), wait this long before pulling again. */
const FETCH_RETRY_MS = 1_000;

export interface NatsJobQueueOptions {
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly concurrency: number;
  /** Longer than one delivery (DELIVERY_HOLD_MS); a replica that dies mid-job loses it after this. */
  readonly ackWaitMs: number;
  /** Stream replicas (NATS_REPLICAS) when this process creates the stream. */
  readonly replicas: number;
  readonly logger: Logger;
}

/**
 * Delivery jobs in a JetStream work-queue stream. Retry delays are `nak(delay)`; the stream keeps
 * jobs while no replica runs, and a job held by a replica that dies is redelivered to another one
 * after `ackWaitMs`. A stream or consumer lost with NATS's store is made again by the first
 * operation that finds it gone.
 */
export async function createNatsJobQueue(options: NatsJobQueueOptions): Promise<JobQueue> {
  const { js, jsm, logger } = options;
  const pulling = outageLog(logger, 'pulling delivery jobs');
  const openQueue = async () => {
    await ensureStream(jsm, options.replicas);
    await ensureConsumer(jsm, options);
  };
  await openQueue();
  const remade = remakingWhenGone({
    what: `the delivery queue ${DELIVERY_STREAM}`,
    isGone: () => notFound(jsm.consumers.info(DELIVERY_STREAM, DELIVERY_CONSUMER)),
    remake: openQueue,
    logger,
  });
  const running = new Set<Promise<void>>();
  let loop: Promise<void> | null = null;
  let closing = false;
  const retryWait = wakeablePause();

  // Jobs a fetch under way still brings are released (nak) as they arrive.
  const stopTaking = (): void => {
    closing = true;
    retryWait.wake();
  };

  const handleMessage = async (m: JsMsg, handler: JobHandler): Promise<void> => {
    const keepAlive = setInterval(() => m.working(), Math.max(500, Math.floor(options.ackWaitMs / 2)));
    try {
      const outcome = await handler(readJob(m));
      if ('retryInMs' in outcome) m.nak(outcome.retryInMs);
      else m.ack();
    } catch (error) {
      logger.error({ err: error }, 'delivery job crashed; retried later');
      m.nak(CRASHED_JOB_RETRY_MS);
    } finally {
      clearInterval(keepAlive);
    }
  };

  return {
    keepsJobsAcrossRestarts: true,
    enqueue: async (jobs) => {
      await remade(() => Promise.all(jobs.map(({ traceparent, ...job }) => js.publish(DELIVERY_SUBJECT, JSON.stringify(job), { msgID: jobId(job), ...traceHeaders(traceparent) }))));
    },
    start: async (handler) => {
      const consumer = await js.consumers.get(DELIVERY_STREAM, DELIVERY_CONSUMER);
      loop = (async () => {
        while (!closing) {
          if (running.size >= options.concurrency) {
            await Promise.race(running);
            continue;
          }
          try {
            // A pull from a consumer lost with NATS's store fails like one while NATS is away ("heartbeats missed").
            await remade(async () => {
              const batch = await consumer.fetch({ max_messages: options.concurrency - running.size, expires: FETCH_EXPIRES_MS });
              for await (const m of batch) {
                // A job pulled proves pulling works again, up to a second before the batch expires.
                pulling.succeeded();
                // Shutting down: jobs pulled but not started go straight back to another replica.
                if (closing) {
                  m.nak();
                  continue;
                }
                const run = handleMessage(m, handler).finally(() => running.delete(run));
                running.add(run);
              }
            });
            pulling.succeeded();
          } catch (error) {
            if (closing) break;
            pulling.failed(error);
            await retryWait.pause(FETCH_RETRY_MS);
          }
        }
      })();
    },
    depth: async () => {
      const info = await remade(() => jsm.consumers.info(DELIVERY_STREAM, DELIVERY_CONSUMER));
      return info.num_pending + info.num_ack_pending;
    },
    stopTaking,
    /** Finishes the jobs in flight (each acked or nak'd), releases the ones pulled but not started. */
    close: async () => {
      stopTaking();
      await loop;
      await Promise.allSettled([...running]);
    },
  };
}

/** The job's trace context travels as the W3C `traceparent` message header, like an HTTP request's. */
function traceHeaders(traceparent: string | undefined): { headers?: MsgHdrs } {
  if (traceparent === undefined) return {};
  const h = natsHeaders();
  h.set('traceparent', traceparent);
  return { headers: h };
}

function readJob(m: JsMsg): DeliveryJob {
  const job = m.json<DeliveryJob>();
  const traceparent = m.headers?.get('traceparent');
  return traceparent ? { ...job, traceparent } : job;
}

async function ensureStream(jsm: JetStreamManager, replicas: number): Promise<void> {
  const config = {
    name: DELIVERY_STREAM,
    subjects: [DELIVERY_SUBJECT],
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
    num_replicas: replicas,
    duplicate_window: nanos(DUPLICATE_WINDOW_MS),
    max_age: nanos(JOB_MAX_AGE_MS),
  };
  try {
    await jsm.streams.info(DELIVERY_STREAM);
  } catch {
    try {
      await jsm.streams.add(config);
    } catch (error) {
      // Another replica created it first.
      await jsm.streams.info(DELIVERY_STREAM).catch(() => {
        throw error;
      });
    }
  }
}

async function ensureConsumer(jsm: JetStreamManager, options: NatsJobQueueOptions): Promise<void> {
  const config = {
    durable_name: DELIVERY_CONSUMER,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    ack_wait: nanos(options.ackWaitMs),
    max_deliver: -1,
    // Jobs waiting out a retry delay (nak with delay) stay "ack pending", one per failing subscriber and
    // change: any cap is a number of failing subscribers past which the consumer hands out nothing, to
    // every replica (20,000 did, with ~8,000 failing through three changes). What one replica takes at
    // once is bounded by its fetches (its concurrency), not by this.
    max_ack_pending: -1,
  };
  try {
    await jsm.consumers.add(DELIVERY_STREAM, config);
  } catch {
    await jsm.consumers.update(DELIVERY_STREAM, DELIVERY_CONSUMER, { ack_wait: config.ack_wait, max_ack_pending: config.max_ack_pending });
  }
}
