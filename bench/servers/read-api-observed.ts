/**
 * The read API composed as services/read-api/src/main.ts does, for the `overhead` suite. Metrics are
 * always on in the service; BENCH_METRICS=off is the only way to take them out: an empty registry
 * (no default collectors) and a request histogram that records nothing. Tracing is on or off through
 * the instrumentation preload and OTEL_* variables, exactly as in a pod. BENCH_BUSY_US adds that many
 * microseconds of busy CPU before every request: the suite's control, a cost known in advance.
 */
import { runPod } from '@reviews/dataset-store';
import { performance } from 'node:perf_hooks';
import { createMetrics, Registry, type Metrics, type RequestHandler } from '@reviews/runtime';
import { createReadApi, SERVICE } from '@reviews/read-api';

function withoutMetrics(): Metrics {
  const nothing = { observe: () => undefined };
  return { registry: new Registry(), httpDuration: { labels: () => nothing } as unknown as Metrics['httpDuration'] };
}

function afterBusyCpu(micros: number, handler: RequestHandler): RequestHandler {
  const millis = micros / 1000;
  return (req, res) => {
    const until = performance.now() + millis;
    while (performance.now() < until);
    handler(req, res);
  };
}

const busyMicros = Number(process.env.BENCH_BUSY_US ?? 0);
await runPod(SERVICE, ({ logger, metrics, snapshots }) => {
  const handler = createReadApi({ logger, metrics, snapshots });
  return { handler: busyMicros > 0 ? afterBusyCpu(busyMicros, handler) : handler };
}, {
  metrics: process.env.BENCH_METRICS === 'off' ? withoutMetrics() : createMetrics(SERVICE),
});
