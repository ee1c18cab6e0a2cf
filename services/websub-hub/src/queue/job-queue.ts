import type { TopicName } from '@reviews/domain';

/** "Notify this subscription that its topic changed": the content is looked up when the job runs. */
export interface DeliveryJob {
  readonly subscriptionKey: string;
  readonly topic: TopicName;
  /** Topic change sequence (TopicState.seq) and the ETag announced with it. */
  readonly seq: number;
  readonly etag: string;
  readonly enqueuedAt: number;
  /** W3C traceparent of the announcement, so the delivery joins the publish's trace. */
  readonly traceparent?: string;
}

export type JobOutcome = { readonly done: true } | { readonly retryInMs: number };

export type JobHandler = (job: DeliveryJob) => Promise<JobOutcome>;

/**
 * Delivery work shared by whoever runs the hub: an in-process queue in standalone, a JetStream
 * work queue with one durable consumer shared by all replicas otherwise. Each job runs once
 * (at least once across crashes); `retryInMs` puts it back after a delay, and so does a handler
 * that throws (CRASHED_JOB_RETRY_MS).
 */
export interface JobQueue {
  /**
   * Whether queued jobs outlive this process (a JetStream stream does; an in-process queue loses
   * them at close or crash, and the hub then re-derives the undelivered ones from the store).
   */
  readonly keepsJobsAcrossRestarts: boolean;
  /** Enqueue; a job already queued (same subscription, seq and ETag) is not queued twice. */
  enqueue(jobs: readonly DeliveryJob[]): Promise<void>;
  start(handler: JobHandler): Promise<void>;
  /** Jobs waiting or running. */
  depth(): Promise<number>;
  /** Start no more jobs; those running go on, and `close` waits for them. Where the jobs not started go is `close`'s. */
  stopTaking(): void;
  close(): Promise<void>;
}

/**
 * A job whose handler threw (a bug, or a store write that failed) runs again after this, on every
 * queue: a notification is not lost to one failure, and a bug does not spin.
 */
export const CRASHED_JOB_RETRY_MS = 5_000;

/** Dedupe id of a job: one notification per subscription per announced change. */
export function jobId(job: DeliveryJob): string {
  return `${job.subscriptionKey}:${job.seq}:${job.etag.replace(/[^A-Za-z0-9_-]/g, '')}`;
}
