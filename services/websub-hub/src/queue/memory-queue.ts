import type { Logger } from '@reviews/runtime';
import { CRASHED_JOB_RETRY_MS, jobId, type DeliveryJob, type JobHandler, type JobQueue } from './job-queue.js';

/**
 * The standalone job queue: one pending job per subscription. A newer change replaces a job that
 * is waiting for its retry delay (the retry then sends the newest content instead of queueing a
 * second notification); at most `concurrency` jobs run at once. Close drops the jobs not running
 * yet and a crash of the process loses all of them: the next hub to start queues again, from the store, every
 * notification not acknowledged (resumeUndelivered).
 */
export function createMemoryJobQueue(options: { concurrency: number; logger: Logger }): JobQueue {
  interface Pending {
    job: DeliveryJob;
    timer: NodeJS.Timeout | null;
  }
  const pending = new Map<string, Pending>();
  const ready: string[] = [];
  const running = new Set<Promise<void>>();
  let handler: JobHandler | null = null;
  let closed = false;

  const pump = (): void => {
    while (handler && !closed && running.size < options.concurrency && ready.length > 0) {
      const key = ready.shift() as string;
      const entry = pending.get(key);
      if (!entry || entry.timer) continue;
      pending.delete(key);
      const run = execute(entry.job).finally(() => {
        running.delete(run);
        pump();
      });
      running.add(run);
    }
  };

  const schedule = (job: DeliveryJob, delayMs: number): void => {
    const key = job.subscriptionKey;
    const existing = pending.get(key);
    if (existing) {
      if (jobId(existing.job) === jobId(job) || existing.job.seq > job.seq) return;
      if (existing.timer) clearTimeout(existing.timer);
    }
    const entry: Pending = { job, timer: null };
    pending.set(key, entry);
    if (delayMs > 0) {
      entry.timer = setTimeout(() => {
        entry.timer = null;
        ready.push(key);
        pump();
      }, delayMs);
    } else {
      ready.push(key);
    }
    pump();
  };

  const execute = async (job: DeliveryJob): Promise<void> => {
    let retryInMs: number | null;
    try {
      const outcome = await (handler as JobHandler)(job);
      retryInMs = 'retryInMs' in outcome ? outcome.retryInMs : null;
    } catch (error) {
      options.logger.error({ err: error, subscription: job.subscriptionKey }, 'delivery job crashed; retried later');
      retryInMs = CRASHED_JOB_RETRY_MS;
    }
    // A newer job for the same subscription, queued meanwhile, supersedes this retry.
    if (retryInMs !== null && !closed && !pending.has(job.subscriptionKey)) schedule(job, retryInMs);
  };

  const stopTaking = (): void => {
    closed = true;
  };

  return {
    keepsJobsAcrossRestarts: false,
    enqueue: async (jobs) => {
      for (const job of jobs) schedule(job, 0);
    },
    start: async (h) => {
      handler = h;
      pump();
    },
    depth: async () => pending.size + running.size,
    stopTaking,
    close: async () => {
      stopTaking();
      for (const entry of pending.values()) if (entry.timer) clearTimeout(entry.timer);
      pending.clear();
      await Promise.allSettled([...running]);
    },
  };
}
