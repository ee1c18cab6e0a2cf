/**
 * The read API composed as services/read-api/src/main.ts does, for the `overhead` suite. Metrics are
 * always on in the service; BENCH_METRICS=off is the only way to take them out: an empty registry
 * (no default collectors) and a request histogram that records nothing. Tracing is on or off through
 * the instrumentation preload and OTEL_* variables, exactly as in a pod.
 */
import { runPod } from '@reviews/dataset-store';
import { createMetrics, Registry, type Metrics } from '@reviews/runtime';
import { createReadApi, SERVICE } from '@reviews/read-api';

function withoutMetrics(): Metrics {
  const nothing = { observe: () => undefined };
  return { registry: new Registry(), httpDuration: { labels: () => nothing } as unknown as Metrics['httpDuration'] };
}

await runPod(SERVICE, ({ logger, metrics, snapshots }) => ({ handler: createReadApi({ logger, metrics, snapshots }) }), {
  metrics: process.env.BENCH_METRICS === 'off' ? withoutMetrics() : createMetrics(),
});
