import type { AddressInfo } from 'node:net';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { context, propagation, trace, type TracerProvider } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { createHttpServer, createLogger, createMetrics, observeRequest } from '@reviews/runtime';
import { traceRequests } from '../src/http/trace-requests.js';

export interface TracedServer {
  readonly url: string;
  /** Every log line the server wrote, at info and above. */
  readonly lines: string[];
  close(): Promise<void>;
}

/**
 * A server traced as a pod's is: `provider` registered globally with W3C propagation and the
 * AsyncLocalStorage context manager, each request through traceRequests, then observed as route
 * `/items/:id`, then handed to `handle`. close() stops it and unregisters all three.
 */
export async function startTracedServer(provider: TracerProvider & { shutdown(): Promise<void> }, handle: (req: IncomingMessage, res: ServerResponse) => void): Promise<TracedServer> {
  const contextManager = new AsyncLocalStorageContextManager().enable();
  trace.setGlobalTracerProvider(provider);
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  const lines: string[] = [];
  const logger = createLogger('test', 'info', { write: (line: string) => void lines.push(line) });
  const metrics = createMetrics();
  const server = createHttpServer(
    traceRequests((req, res) => {
      observeRequest(metrics, 'test', req, res, '/items/:id', logger);
      handle(req, res);
    }),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    lines,
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await provider.shutdown();
      contextManager.disable();
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}
