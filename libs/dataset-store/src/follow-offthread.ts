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
 * One worker thread per build, ended as soon as it has answered: a build's garbage (hundreds of MiB
 * at 100,000 reviews) goes with its heap instead of staying resident in an idle worker, and starting
 * a worker (~50 ms) is small next to a build. Sources deliver datasets in order and await each, so
 * builds never overlap. Without the compiled worker (sources run unbuilt) builds run on the calling
 * thread.
 */
export function createContentBuilder(): ContentBuilder {
  if (!existsSync(WORKER_FILE)) {
    return { build: async (request) => buildContent(request), close: async () => undefined };
  }
  const running = new Set<Worker>();
  return {
    build(request) {
      return new Promise<ContentOutcome>((resolve) => {
        const worker = new Worker(WORKER_FILE);
        running.add(worker);
        let settled = false;
        const settle = (outcome: ContentOutcome) => {
          if (settled) return;
          settled = true;
          running.delete(worker);
          void worker.terminate();
          resolve(outcome);
        };
        const receiver = new ContentReceiver();
        worker.on('message', (message: BuildMessage) => {
          const outcome = receiver.receive(message);
          if (outcome) settle(outcome);
          // Acknowledged after pending I/O had its turn, so requests run between slices.
          else setImmediate(() => worker.postMessage('next'));
        });
        // A worker that dies (out of memory, a crash, close()) fails its build.
        worker.once('error', (error) => settle(buildError(error)));
        worker.once('exit', (code) => settle(buildError(new Error(`build worker exited with code ${code}`))));
        worker.postMessage(request);
      });
    },
    async close() {
      await Promise.all([...running].map((worker) => worker.terminate()));
    },
  };
}
