import { describe, it, expect } from '@jest/globals';
import { pino } from 'pino';
import { createMetrics, startHttpService } from '@reviews/runtime';

const ready = { ready: true, version: 'v1', publishedAt: null, source: { connected: true, detail: 'test' }, lastRejection: null };

describe('shutdown deadline', () => {
  it('a close hook that never finishes cannot hold the process past SHUTDOWN_TIMEOUT_MS', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
    const service = await startHttpService({
      service: 'test',
      port: 0,
      metricsPort: 0,
      host: '127.0.0.1',
      shutdownTimeoutMs: 1_500,
      logger,
      metrics: createMetrics(),
      handler: (_req, res) => res.end('ok'),
      readiness: () => ready,
    });
    let laterHookRan = false;
    service.onClose(() => {
      laterHookRan = true;
    });
    // Registered last, so it runs first (reverse order) and blocks the rest.
    service.onClose(() => new Promise<void>(() => undefined));
    const started = Date.now();
    await service.shutdown('test');
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(1_400);
    expect(took).toBeLessThan(3_000);
    expect(laterHookRan).toBe(false);
    expect(lines.join('')).toContain('close hooks did not finish in time');
    expect(service.metricsServer.listening).toBe(false);
  });
});
