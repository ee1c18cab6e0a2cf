import { describe, expect, it } from '@jest/globals';
import { createMetrics } from '@reviews/runtime';
import { createHubMetrics } from '../src/metrics.js';

describe('hub metrics', () => {
  it('a store that cannot be read (NATS down) leaves the last gauge values and never fails the scrape', async () => {
    let reachable = true;
    const metrics = createMetrics('websub-hub');
    createHubMetrics(metrics, {
      subscriptionCounts: async () => {
        if (!reachable) throw new Error('TIMEOUT');
        return { active: 7, expired: 1, pending: 0 };
      },
      queueDepth: async () => {
        if (!reachable) throw new Error('TIMEOUT');
        return 3;
      },
    });
    expect(await metrics.registry.metrics()).toContain('websub_subscriptions{state="active"} 7');
    reachable = false;
    const during = await metrics.registry.metrics();
    expect(during).toContain('websub_subscriptions{state="active"} 7');
    expect(during).toContain('websub_queue_depth 3');
    expect(during).toContain('process_cpu_user_seconds_total{service="websub-hub"}');
  });

  it('a store that hangs (NATS frozen: its requests time out after 5 s) holds a scrape back by a second at most', async () => {
    let hanging = false;
    const never = new Promise<never>(() => undefined);
    const metrics = createMetrics('websub-hub');
    createHubMetrics(metrics, {
      subscriptionCounts: async () => (hanging ? never : { active: 4, expired: 0, pending: 0 }),
      queueDepth: async () => (hanging ? never : 2),
    });
    await metrics.registry.metrics();
    hanging = true;
    const started = performance.now();
    const during = await metrics.registry.metrics();
    expect(performance.now() - started).toBeLessThan(2_500);
    expect(during).toContain('websub_subscriptions{state="active"} 4');
    expect(during).toContain('websub_queue_depth 2');
  });

  it('every series an alert or a panel takes the increase or rate of starts at 0', async () => {
    const metrics = createMetrics('websub-hub');
    createHubMetrics(metrics, { subscriptionCounts: async () => ({ active: 0, expired: 0, pending: 0 }), queueDepth: async () => 0 });
    const text = await metrics.registry.metrics();
    expect(text).toContain('websub_denials_total{reason="delivery-failed-3-times"} 0');
    expect(text).toContain('websub_requests_total{mode="subscribe",outcome="full"} 0');
    // A dashboard's first subscriptions, and an outage's first refusal, were lost to rate().
    for (const series of ['mode="subscribe",outcome="accepted"', 'mode="unsubscribe",outcome="accepted"', 'mode="subscribe",outcome="unavailable"', 'mode="none",outcome="rejected"', 'mode="none",outcome="method_not_allowed"', 'mode="none",outcome="unavailable"', 'mode="publish",outcome="rejected"', 'mode="invalid",outcome="rejected"']) {
      expect(text).toContain(`websub_requests_total{${series}} 0`);
    }
    for (const topic of ['reviews', 'feedJson', 'feedAtom']) expect(text).toContain(`websub_delivery_retries_total{topic="${topic}"} 0`);
  });
});
