import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { buildContent, buildError, reviveBodies, type BuildRequest, type ContentOutcome } from './follow-build.js';

/** Builds snapshot content (parse, validate, derive, render, compress) away from the serving thread. */
export interface ContentBuilder {
  build(request: BuildRequest): Promise<ContentOutcome>;
  close(): Promise<void>;
}

/**
 * The compiled worker entry. From `src` (tests run the sources) and from `dist` alike this is the
 * built file: a worker thread loads plain JavaScript.
 */
const WORKER_FILE = fileURLToPath(new URL('../dist/follow-worker.js', import.meta.url));

/**
 * One long-lived worker thread, one build at a time (sources deliver datasets in order and await
 * each). Without the compiled worker (sources run unbuilt) builds run on the calling thread.
 */
export function createContentBuilder(): ContentBuilder {
  if (!existsSync(WORKER_FILE)) {
    return { build: async (request) => buildContent(request), close: async () => undefined };
  }
  let worker: Worker | null = null;
  let pending: { resolve: (outcome: ContentOutcome) => void } | null = null;

  const settle = (outcome: ContentOutcome) => {
    const waiting = pending;
    pending = null;
    worker?.unref();
    waiting?.resolve(outcome);
  };
  const start = (): Worker => {
    const started = new Worker(WORKER_FILE);
    started.on('message', (outcome: ContentOutcome) => settle(outcome.ok ? { ok: true, content: reviveBodies(outcome.content) } : outcome));
    // A worker that dies (out of memory, a crash) fails its build; the next build starts a new one.
    started.on('error', (error) => settle(buildError(error)));
    started.on('exit', (code) => {
      if (worker === started) worker = null;
      settle(buildError(new Error(`build worker exited with code ${code}`)));
    });
    return started;
  };

  return {
    build(request) {
      if (pending) return Promise.reject(new Error('one build at a time'));
      worker ??= start();
      const running = worker;
      // Referenced while building; an idle worker must not keep the process alive.
      running.ref();
      return new Promise<ContentOutcome>((resolve) => {
        pending = { resolve };
        running.postMessage(request);
      });
    },
    async close() {
      const running = worker;
      worker = null;
      if (running) await running.terminate();
    },
  };
}
