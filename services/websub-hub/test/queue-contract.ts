import { describe, it, expect, afterEach } from '@jest/globals';
import { CRASHED_JOB_RETRY_MS, type DeliveryJob, type JobHandler, type JobOutcome, type JobQueue } from '../src/queue/job-queue.js';
import { waitFor } from './support.js';

/** A queue under test, empty when opened; `dispose` closes it and removes what it kept. */
export interface QueueFixture {
  readonly queue: JobQueue;
  dispose(): Promise<void>;
}

const TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

let jobCount = 0;
/** A job of its own subscription, so no two tests (or queues sharing a stream) dedupe each other's. */
function newJob(overrides: Partial<DeliveryJob> = {}): DeliveryJob {
  jobCount += 1;
  return { subscriptionKey: `sub-${process.pid}-${Date.now()}-${jobCount}`, topic: 'reviews', seq: 1, etag: `"v${jobCount}"`, enqueuedAt: Date.now(), ...overrides };
}

/** Releases of the handlers the current test holds: a failed test must not leave its queue's close waiting forever. */
const heldGates = new Set<() => void>();

/** A handler that records each run and holds it until released. */
function recordingHandler(outcome: (job: DeliveryJob, run: number) => JobOutcome | Promise<JobOutcome> = () => ({ done: true })) {
  const runs: { job: DeliveryJob; at: number }[] = [];
  let running = 0;
  let mostAtOnce = 0;
  let gate: Promise<void> = Promise.resolve();
  let release: () => void = () => {};
  const handler: JobHandler = async (job) => {
    runs.push({ job, at: Date.now() });
    running += 1;
    mostAtOnce = Math.max(mostAtOnce, running);
    try {
      await gate;
      return await outcome(job, runs.filter((r) => r.job.subscriptionKey === job.subscriptionKey).length);
    } finally {
      running -= 1;
    }
  };
  return {
    handler,
    runs,
    runsOf: (job: DeliveryJob) => runs.filter((r) => r.job.subscriptionKey === job.subscriptionKey),
    running: () => running,
    mostAtOnce: () => mostAtOnce,
    hold: () => {
      gate = new Promise((resolve) => (release = resolve));
      heldGates.add(release);
    },
    release: () => release(),
  };
}

/** The one contract every JobQueue implementation honours: what the hub's delivery relies on. */
export function describeJobQueueContract(name: string, open: (concurrency: number) => Promise<QueueFixture>): void {
  describe(`JobQueue contract: ${name}`, () => {
    let fixture: QueueFixture | null = null;
    const openQueue = async (concurrency: number): Promise<JobQueue> => {
      fixture = await open(concurrency);
      return fixture.queue;
    };
    afterEach(async () => {
      for (const release of heldGates) release();
      heldGates.clear();
      await fixture?.dispose();
      fixture = null;
    });

    it('runs each job once, its trace context with it, including jobs enqueued before it started', async () => {
      const queue = await openQueue(4);
      const early = newJob({ traceparent: TRACEPARENT });
      await queue.enqueue([early]);
      const recorder = recordingHandler();
      await queue.start(recorder.handler);
      const later = [newJob(), newJob()];
      await queue.enqueue(later);
      await waitFor(async () => recorder.runs.length === 3 && (await queue.depth()) === 0, 10_000, 'three jobs run and none left');
      expect(recorder.runsOf(early).map((r) => r.job)).toEqual([early]);
      for (const job of later) expect(recorder.runsOf(job).map((r) => r.job)).toEqual([job]);
    });

    it('queues a job once however often it is enqueued while queued (the same subscription, seq and ETag)', async () => {
      const queue = await openQueue(2);
      const job = newJob();
      // Replicas announce the same change concurrently.
      await Promise.all([queue.enqueue([job]), queue.enqueue([job])]);
      await queue.enqueue([{ ...job, enqueuedAt: job.enqueuedAt + 1 }]);
      const recorder = recordingHandler();
      await queue.start(recorder.handler);
      await waitFor(async () => recorder.runs.length >= 1 && (await queue.depth()) === 0, 10_000, 'the job run and none left');
      expect(recorder.runs).toHaveLength(1);
    });

    it('runs a job again after the delay its handler asks for, and not before', async () => {
      const queue = await openQueue(2);
      const job = newJob();
      const recorder = recordingHandler((_, run) => (run === 1 ? { retryInMs: 400 } : { done: true }));
      await queue.start(recorder.handler);
      await queue.enqueue([job]);
      await waitFor(() => recorder.runs.length === 2, 10_000, 'the job run a second time');
      const [first, second] = recorder.runs.map((r) => r.at) as [number, number];
      // Timers may fire a millisecond early against Date.now().
      expect(second - first).toBeGreaterThanOrEqual(390);
      await waitFor(async () => (await queue.depth()) === 0, 10_000, 'no job left');
      expect(recorder.runs).toHaveLength(2);
    });

    it('keeps a job whose handler threw and runs it again later, so one failure loses no notification', async () => {
      const queue = await openQueue(2);
      const job = newJob();
      const recorder = recordingHandler((_, run) => {
        if (run === 1) throw new Error('the store refused a write');
        return { done: true };
      });
      await queue.start(recorder.handler);
      await queue.enqueue([job]);
      await waitFor(() => recorder.runs.length === 2, CRASHED_JOB_RETRY_MS + 5_000, 'the crashed job run again');
      const [first, second] = recorder.runs.map((r) => r.at) as [number, number];
      expect(second - first).toBeGreaterThanOrEqual(CRASHED_JOB_RETRY_MS - 10);
      await waitFor(async () => (await queue.depth()) === 0, 10_000, 'no job left');
    });

    it('runs at most `concurrency` jobs at once and counts the others as waiting', async () => {
      const queue = await openQueue(2);
      const recorder = recordingHandler();
      recorder.hold();
      await queue.start(recorder.handler);
      await queue.enqueue([newJob(), newJob(), newJob(), newJob(), newJob()]);
      await waitFor(async () => recorder.running() === 2 && (await queue.depth()) === 5, 10_000, 'two jobs running, five waiting or running');
      expect(recorder.mostAtOnce()).toBe(2);
      recorder.release();
      await waitFor(async () => recorder.runs.length === 5 && (await queue.depth()) === 0, 10_000, 'all five run');
      expect(recorder.mostAtOnce()).toBe(2);
    });

    it('once told to stop taking jobs, starts none, and closes when the running ones finish', async () => {
      const queue = await openQueue(1);
      const recorder = recordingHandler();
      recorder.hold();
      await queue.start(recorder.handler);
      const [first, second] = [newJob(), newJob()];
      await queue.enqueue([first, second]);
      await waitFor(() => recorder.running() === 1, 10_000, 'one job running');
      queue.stopTaking();
      // What is still running when close resolves: it must have waited for the held job.
      const runningWhenClosed = queue.close().then(() => recorder.running());
      await queue.depth();
      recorder.release();
      expect(await runningWhenClosed).toBe(0);
      expect(recorder.runs.map((r) => r.job)).toEqual([expect.objectContaining({ subscriptionKey: expect.stringMatching(`^(${first.subscriptionKey}|${second.subscriptionKey})$`) })]);
    });
  });
}
