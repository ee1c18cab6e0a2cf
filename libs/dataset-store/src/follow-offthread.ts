import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { setImmediate as yieldToRequests } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';
import { asBuffer, buildContent, buildError, RETIRE_AFTER_BYTES, type BuildRequest, type ContentOutcome } from './follow-build.js';
import { unpackOutcome, type BuildMessage, type HeldContent, type LateBrotliMessage, type WorkerRequest } from './follow-transfer.js';

/** Brotli bodies by content hash (see `withLateBrotli`), or null when the worker ended before sending them. */
export type LateBrotli = Promise<ReadonlyMap<string, Buffer> | null>;

/** A build's outcome; when it deferred brotli, the brotli variants its content was sent without follow. */
export type BuiltContent = ContentOutcome & { readonly lateBrotli?: LateBrotli };

/** Builds snapshot content (parse, validate, derive, render, compress) away from the serving thread. */
export interface ContentBuilder {
  /** `held`: the version being served, whose reviews and analyses the new content may share (follow-transfer.ts). */
  build(request: BuildRequest, held?: HeldContent | null): Promise<BuiltContent>;
  close(): Promise<void>;
}

/**
 * The compiled worker entry. From `src` (tests run the sources) and from `dist` alike this is the
 * built file: a worker thread loads plain JavaScript.
 */
const WORKER_FILE = fileURLToPath(new URL('../dist/follow-worker.js', import.meta.url));


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
  /**
   * The worker's next `count` messages, in order, each the error it died of if it dies first. One
   * listener takes them all: a second message posted right after the first may be dispatched before
   * a listener added once the first arrived.
   */
  const nextMessages = (from: Worker, count: number): Promise<unknown>[] => {
    const settlers: ((message: unknown) => void)[] = [];
    const messages = Array.from({ length: count }, () => new Promise<unknown>((resolve) => settlers.push(resolve)));
    let received = 0;
    const onMessage = (message: unknown) => {
      settlers[received++]?.(message);
      if (received === count) from.off('message', onMessage);
    };
    from.on('message', onMessage);
    running = {
      worker: from,
      fail: (error) => {
        from.off('message', onMessage);
        for (const settle of settlers.slice(received)) settle(error);
      },
    };
    return messages;
  };
  const release = (from: Worker) => {
    running = null;
    from.unref();
  };
  /** Settles once the worker sent everything of the previous build: the next build waits for it. */
  let previousSent: Promise<unknown> = Promise.resolve();
  worker = start();

  return {
    async build(request, held = null) {
      await previousSent;
      if (closed) return buildError(new Error('the content builder is closed'));
      const current = worker ?? (worker = start());
      current.ref();
      const large = request.bytes.byteLength > RETIRE_AFTER_BYTES;
      // A large build's worker ends right after its one message (below), so such a build does not defer.
      const deferBrotli = request.deferBrotli && !large;
      // A deferring build's worker sends a second message, the brotli bodies, whatever the outcome.
      const [answered, lateAnswer] = nextMessages(current, deferBrotli ? 2 : 1) as [Promise<BuildMessage | Error>, Promise<LateBrotliMessage | Error>?];
      const posted: WorkerRequest = { ...request, deferBrotli, heldVersion: held?.version ?? null };
      current.postMessage(posted, movableBuffers(request.bytes));
      const answer = await answered;
      if (answer instanceof Error) {
        release(current);
        return buildError(answer);
      }
      let lateBrotli: LateBrotli | undefined;
      if (lateAnswer) {
        lateBrotli = lateAnswer.then((late) => {
          release(current);
          return late instanceof Error ? null : new Map([...late.brotli].map(([hash, body]) => [hash, asBuffer(body)]));
        });
        previousSent = lateBrotli;
      } else {
        release(current);
      }
      // Ended before the serving thread deserializes its copy of the reviews: V8 keeps an ended
      // isolate's heap pages (~280 MiB after a 100,000-review build) for ~8 s and hands them to the
      // first isolate that needs pages, so that copy reuses them instead of adding to the RSS.
      if (large) await retire(current);
      const outcome = await unpackOutcome(answer, yieldToRequests, held);
      return lateBrotli && outcome.ok ? { ...outcome, lateBrotli } : outcome;
    },
    async close() {
      closed = true;
      const idle = worker;
      worker = null;
      await idle?.terminate();
    },
  };
}
