/**
 * Preloaded with `node --import @reviews/runtime/instrumentation <service main>` so HTTP and express
 * are instrumented before they are imported (ESM needs the loader hook registered first).
 * Exporter, endpoint, sampler and resource come only from the standard OTEL_* variables.
 */
import { register } from 'node:module';
import { tracingEnabled } from './tracing.js';

if (tracingEnabled()) {
  register('@opentelemetry/instrumentation/hook.mjs', import.meta.url);
  const [{ NodeSDK }, { HttpInstrumentation }, { ExpressInstrumentation }] = await Promise.all([
    import('@opentelemetry/sdk-node'),
    import('@opentelemetry/instrumentation-http'),
    import('@opentelemetry/instrumentation-express'),
  ]);
  const quietPaths = new Set(['/healthz', '/readyz', '/metrics']);
  const sdk = new NodeSDK({
    instrumentations: [
      new HttpInstrumentation({ ignoreIncomingRequestHook: (req) => quietPaths.has((req.url ?? '').split('?')[0] ?? '') }),
      new ExpressInstrumentation(),
    ],
  });
  sdk.start();
  // Flush spans on the way out; the service's own SIGTERM handler drains requests first.
  process.once('beforeExit', () => void sdk.shutdown());
  process.once('SIGTERM', () => setTimeout(() => void sdk.shutdown(), 0).unref());
}
