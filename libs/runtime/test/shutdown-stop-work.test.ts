import { describe, it, expect } from '@jest/globals';
import { pino } from 'pino';
import request from 'supertest';
import { createMetrics, startHttpService, type RequestHandler } from '@reviews/runtime';

const ready = { ready: true, version: 'v1', publishedAt: null, source: { connected: true, detail: 'test' }, lastRejection: null };

describe('shutdown: stop accepting work', () => {
  it('stop-accepting-work hooks run the moment shutdown begins, while requests are in flight; close hooks run after both', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let started!: () => void;
    const inFlight = new Promise<void>((resolve) => (started = resolve));
    const slow: RequestHandler = (_req, res) => {
      started();
      void gate.then(() => res.end('done'));
    };
    const service = await startHttpService({
      service: 'test',
      port: 0,
      metricsPort: 0,
      host: '127.0.0.1',
      shutdownTimeoutMs: 2_000,
      logger: pino({ level: 'silent' }),
      metrics: createMetrics(),
      handler: slow,
      readiness: () => ready,
    });
    const order: string[] = [];
    service.onClose(() => {
      order.push('closed');
    });
    service.onStopAcceptingWork(async () => {
      order.push('work stopping');
      await gate;
      order.push('work stopped');
    });
    service.onStopAcceptingWork(() => {
      throw new Error('a failing hook stops neither the others nor the shutdown');
    });
    const response = request(service.url).get('/slow').then((res) => res);
    await inFlight;
    const stopping = service.shutdown('test');
    expect(order).toEqual(['work stopping']);
    release();
    const res = await response;
    expect(res.status).toBe(200);
    expect(res.text).toBe('done');
    await stopping;
    expect(order).toEqual(['work stopping', 'work stopped', 'closed']);
  });
});
