import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { setImmediate as yieldToRequests } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';
import { buildContent, buildError, type BuildRequest, type ContentOutcome } from './follow-build.js';
import { unpackOutcome, type BuildMessage } from './follow-transfer.js';

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
 * The worker's young generation, in MiB: V8's classic 16 MiB semi-spaces instead of the 64 MiB its
 * heap limit would pick on a large machine. Nearly everything a build allocates lives until the build
 * ends, so the larger one only held ~130 MiB more pages (and copied more survivors): at 100,000
 * reviews peak and serving RSS fell by ~120 MiB each, and builds of 2,000 and 10,000 reviews took
 * no longer (ADR 0007).
 */
const YOUNG_GENERATION_MB = 48;

/**
 * The dataset's bytes are moved to the worker, not copied, when they fill their ArrayBuffer (a file
 * or an object store read does; a small Buffer sharing Node's pool does not): a copy on each side
 * for the whole build was ~100 MiB more at 100,000 reviews. The caller's `bytes` are then empty.
 */
function movableBuffers(bytes: Uint8Array): ArrayBuffer[] {
  const { buffer } = bytes;
  return buffer instanceof ArrayBuffer && bytes.byteOffset === 0 && bytes.byteLength === buffer.byteLength ? [buffer] : [];
}

/**
 * One long-lived worker thread, started ahead of the first build so its modules are loaded by then;
 * after it dies or after a large build, the next build starts a fresh one. Sources deliver datasets
 * in order and await each, so builds never overlap. Without the compiled worker (sources run
 * unbuilt) builds run on the calling thread.
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
    const started = new Worker(WORKER_FILE, { resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB } });
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
  const retire = async (retired: Worker) => {
    if (worker === retired) worker = null;
    await retired.terminate();
  };
  worker = start();

  return {
    async build(request) {
      if (closed) return buildError(new Error('the content builder is closed'));
      const current = worker ?? (worker = start());
      current.ref();
      const large = request.bytes.byteLength > RETIRE_AFTER_BYTES;
      const answer = await new Promise<BuildMessage | Error>((resolve) => {
        running = { worker: current, fail: resolve };
        // A worker that dies instead of answering is never used again, nor is this listener.
        current.once('message', resolve);
        current.postMessage(request, movableBuffers(request.bytes));
      });
      running = null;
      current.unref();
      if (answer instanceof Error) return buildError(answer);
      // Ended before the serving thread deserializes its copy of the reviews: V8 keeps an ended
      // isolate's heap pages (~280 MiB after a 100,000-review build) for ~8 s and hands them to the
      // first isolate that needs pages, so that copy reuses them instead of adding to the RSS.
      if (large) await retire(current);
      return unpackOutcome(answer, yieldToRequests);
    },
    async close() {
      closed = true;
      const idle = worker;
      worker = null;
      await idle?.terminate();
    },
  };
}
