import { describe, expect, it } from '@jest/globals';
import { Histogram, Registry } from 'prom-client';
import { HTTP_DURATION_BUCKETS } from '../src/metrics.js';
import { RequestHistogram } from '../src/request-histogram.js';

const NAME = 'http_request_duration_seconds';
const HELP = 'HTTP request duration.';
const LABELS = ['service', 'method', 'route', 'status_code'] as const;

/** The same observations through prom-client's Histogram and through RequestHistogram, each in its own registry. */
function bothFed(observations: readonly [labels: [string, string, string, string], seconds: number][]) {
  const stockRegistry = new Registry();
  const stock = new Histogram({ name: NAME, help: HELP, labelNames: LABELS, buckets: HTTP_DURATION_BUCKETS, registers: [stockRegistry] });
  const fastRegistry = new Registry();
  const fast = new RequestHistogram(NAME, HELP, LABELS, HTTP_DURATION_BUCKETS, fastRegistry);
  for (const [[service, method, route, status_code], seconds] of observations) {
    stock.labels(service, method, route, status_code).observe(seconds);
    fast.labels(service, method, route, status_code).observe(seconds);
  }
  return { stockRegistry, fastRegistry, fast };
}

describe('RequestHistogram', () => {
  // Below, on and between bounds, beyond the last one, a negative value, several series in an order that is not sorted.
  const observations: [[string, string, string, string], number][] = [
    [['read-api', 'GET', '/reviews.json', '200'], 0.00003],
    [['read-api', 'GET', '/reviews.json', '200'], 0.0005],
    [['read-api', 'GET', '/reviews.json', '304'], 0.0007],
    [['mcp-gateway', 'POST', '/mcp', '200'], 0.012],
    [['read-api', 'GET', '/reviews.json', '200'], 11],
    [['read-api', 'GET', '/api/reviews/search', '400'], 2.5],
    [['mcp-gateway', 'POST', '/mcp', '200'], -0.001],
    [['read-api', 'GET', '/reviews.json', '200'], 0.1 + 0.2],
  ];

  it("writes the exposition prom-client's Histogram writes for the same observations", async () => {
    const { stockRegistry, fastRegistry } = bothFed(observations);
    const text = await fastRegistry.metrics();
    expect(text).toBe(await stockRegistry.metrics());
    expect(text).toContain(`${NAME}_bucket{le="0.0005",service="read-api",method="GET",route="/reviews.json",status_code="200"} 2`);
    expect(text).toContain(`${NAME}_count{service="read-api",method="GET",route="/reviews.json",status_code="200"} 4`);
  });

  it("gives the JSON form prom-client's Histogram gives", async () => {
    const { stockRegistry, fastRegistry } = bothFed(observations);
    expect(await fastRegistry.getMetricsAsJSON()).toEqual(await stockRegistry.getMetricsAsJSON());
  });

  it('forgets every series on reset, as the registry resets metrics', async () => {
    const { stockRegistry, fastRegistry } = bothFed(observations);
    stockRegistry.resetMetrics();
    fastRegistry.resetMetrics();
    expect(await fastRegistry.metrics()).toBe(await stockRegistry.metrics());
    expect(await fastRegistry.metrics()).not.toContain('_count');
  });

  it('refuses a wrong number of label values and a value that is not a finite number', () => {
    const { fast } = bothFed([]);
    expect(() => fast.labels('read-api', 'GET')).toThrow(/takes 4 label values/);
    expect(() => fast.labels('read-api', 'GET', '/x', '200').observe(Number.NaN)).toThrow(TypeError);
  });

  it('cannot be registered twice under its name', () => {
    const { fastRegistry } = bothFed([]);
    expect(() => new RequestHistogram(NAME, HELP, LABELS, HTTP_DURATION_BUCKETS, fastRegistry)).toThrow(/already been registered/);
  });
});
