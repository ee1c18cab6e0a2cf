import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { buildContent, buildError, type BuildRequest, type ContentOutcome } from './follow-build.js';
import { ContentReceiver, type BuildMessage } from './follow-transfer.js';

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
 * A dataset this large (~15,000 reviews and up) retires the worker after its build: the build's
 * garbage (hundreds of MiB at 100,000 reviews) leaves with the worker's heap instead of staying
 * resident in an idle one, and a fresh worker's start-up and cold code are small next to such a
 * build. Below it the worker is kept: at 2,000 reviews start-up and cold code were half the build.
 */
const RETIRE_AFTER_BYTES = 16 * 1024 * 1024;

/**
 * One long-lived worker thread, started ahead of the first build so its modules are loaded by then;
 * after it dies or after a large build, the next build starts a fresh one. Sources deliver datasets in order and await
 * each, so builds never overlap. Without the compiled worker (sources run unbuilt) builds run on
 * the calling thread.
 */
export function createContentBuilder(): ContentBuilder {
  if (!existsSync(WORKER_FILE)) {
    return { build: async (request) => buildContent(request), close: async () => undefined };
  }
  let worker: Worker | null = null;
  let closed = false;
  /** The build under way and how to fail it when its worker dies (out of memory, a crash, close()). */
  let running: { readonly worker: Worker; readonly fail: (error: Error) => void } | null = null;

  const start = (): Worker => {
    const started = new Worker(WORKER_FILE);
    // Idle, the worker does not keep the process alive; a build refs it.
    started.unref();
    const died = (error: Error) => {
      if (worker === started) worker = null;
      if (running?.worker === started) running.fail(error);
    };
    started.once('error', died);
    started.once('exit', (code) => died(new Error(`build worker exited with code ${code}`)));
    return started;
  };
  /** The next build starts a fresh worker: an idle one would only add its own heap to a large dataset's RSS. */
  const retire = (retired: Worker) => {
    if (worker === retired) worker = null;
    void retired.terminate();
  };
  worker = start();

  return {
    build(request) {
      return new Promise<ContentOutcome>((resolve) => {
        if (closed) return resolve(buildError(new Error('the content builder is closed')));
        const current = worker ?? (worker = start());
        current.ref();
        const receiver = new ContentReceiver();
        const settle = (outcome: ContentOutcome) => {
          if (running?.worker !== current) return;
          running = null;
          current.off('message', onMessage);
          current.unref();
          if (request.bytes.byteLength > RETIRE_AFTER_BYTES) retire(current);
          resolve(outcome);
        };
        const onMessage = (message: BuildMessage) => {
          const outcome = receiver.receive(message);
          if (outcome) settle(outcome);
          // Acknowledged after pending I/O had its turn, so requests run between slices.
          else setImmediate(() => current.postMessage('next'));
        };
        running = { worker: current, fail: (error) => settle(buildError(error)) };
        current.on('message', onMessage);
        current.postMessage(request);
      });
    },
    async close() {
      closed = true;
      const idle = worker;
      worker = null;
      await idle?.terminate();
    },
  };
}
