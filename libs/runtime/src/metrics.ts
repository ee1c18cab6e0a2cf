import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** Sub-millisecond buckets first: the precomputed read path answers in tens of microseconds. */
export const HTTP_DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 10];

export interface Metrics {
  readonly registry: Registry;
  readonly httpDuration: Histogram<'service' | 'method' | 'route' | 'status_code'>;
}

/** One registry per process, shared by every service composed into it. */
export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const httpDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration by service, method, route template and status code.',
    labelNames: ['service', 'method', 'route', 'status_code'] as const,
    buckets: HTTP_DURATION_BUCKETS,
    registers: [registry],
  });
  return { registry, httpDuration };
}

export { Counter, Gauge, Histogram, Registry };
