/**
 * Preloaded with `node --import @reviews/runtime/instrumentation <service main>` so express is
 * instrumented before it is imported (ESM needs the loader hook registered first). Incoming HTTP
 * requests get their SERVER span from the runtime itself (http/trace-requests.ts): the generic HTTP
 * instrumentation cost more than a precomputed response (bench suite `overhead`).
 * Exporter, endpoint, sampler and resource come only from the standard OTEL_* variables.
 */
import { register } from 'node:module';
import { PooledIdGenerator } from './trace-ids.js';
import { tracingEnabled } from './tracing.js';

if (tracingEnabled()) {
  register('@opentelemetry/instrumentation/hook.mjs', import.meta.url);
  const [{ NodeSDK }, { ExpressInstrumentation }] = await Promise.all([import('@opentelemetry/sdk-node'), import('@opentelemetry/instrumentation-express')]);
  const sdk = new NodeSDK({ instrumentations: [new ExpressInstrumentation()], idGenerator: new PooledIdGenerator() });
  sdk.start();
  // Flush spans on the way out; the service's own SIGTERM handler drains requests first.
  process.once('beforeExit', () => void sdk.shutdown());
  process.once('SIGTERM', () => setTimeout(() => void sdk.shutdown(), 0).unref());
}
