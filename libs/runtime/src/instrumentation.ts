/**
 * Preloaded with `node --import @reviews/runtime/instrumentation <service main>`, as every pod, the
 * image and the npm scripts start a service: it sets the V8 flags the services run with, and express is
 * instrumented before it is imported (ESM needs the loader hook registered first). The hook is
 * import-in-the-middle's synchronous one (`module.registerHooks`), run on the main thread: the
 * `module.register` hook the OpenTelemetry docs show runs on a loader thread that stays for the
 * life of the process, with the threads and ~45 MB it brings (ADR 0009). Incoming HTTP
 * requests get their SERVER span from the runtime itself (http/trace-requests.ts): the generic HTTP
 * instrumentation cost more than a precomputed response (bench suite `overhead`).
 * Exporter, endpoint, sampler and resource come only from the standard OTEL_* variables; the
 * sampler they name is the runtime's own implementation of the SDK's (sampling.ts).
 */
import { setFlagsFromString } from 'node:v8';
import { samplerFromEnv } from './sampling.js';
import { PooledIdGenerator } from './trace-ids.js';
import { tracingEnabled } from './tracing.js';

// V8 pretenures an allocation site whose objects survived young-generation collections: from then
// on they are allocated in the old generation and die there, where only full collections free them.
// A request's objects are short-lived, but a scavenge that finds many of them still in flight (a
// burst, a slow first second) pretenures their sites for the life of the process. Five of eight
// fresh read-api processes did so under wrk: a full collection every ~650 ms, p99 ~17 ms instead of
// ~1.7 ms, a quarter less throughput. Spans waiting in the batch processor's queue did the same with
// tracing on (ADR 0009). Without pretenuring, all of them die young.
setFlagsFromString('--no-allocation-site-pretenuring');

if (tracingEnabled()) {
  const [{ register }, { NodeSDK }, { ExpressInstrumentation }] = await Promise.all([
    import('import-in-the-middle/register-hooks.mjs'),
    import('@opentelemetry/sdk-node'),
    import('@opentelemetry/instrumentation-express'),
  ]);
  register();
  const ids = new PooledIdGenerator();
  const sdk = new NodeSDK({ instrumentations: [new ExpressInstrumentation()], idGenerator: ids, sampler: samplerFromEnv(process.env, ids) });
  sdk.start();
  // Flush spans on the way out; the service's own SIGTERM handler drains requests first.
  process.once('beforeExit', () => void sdk.shutdown());
  process.once('SIGTERM', () => setTimeout(() => void sdk.shutdown(), 0).unref());
}
