/**
 * Preloaded with `node --import @reviews/runtime/instrumentation <service main>` so express is
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

if (tracingEnabled()) {
  // Finished spans wait in the batch span processor's queue (a batch filling up, its 5 s schedule,
  // an export in flight or retrying) long enough to survive young-generation collections. V8 then
  // pretenures the SDK's span allocations: every later span is allocated in the old generation and
  // dies there, which grew the old generation ~1-2.5 MB per scavenge under load and brought full
  // collections, with a collector answering or not (ADR 0009). Without pretenuring spans die young.
  setFlagsFromString('--no-allocation-site-pretenuring');
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
