import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { stopChild } from '../support/child-process.js';
import { eventually } from '../support/eventually.js';
import { freePort } from '../support/nats-server.js';
import { repoRoot } from './assets.js';

/** The fields of an OTLP/JSON span this test reads. */
interface ExportedSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId?: string;
  readonly links?: readonly { readonly traceId: string; readonly spanId: string }[];
  readonly name: string;
  readonly kind: number;
  readonly scope: string;
  readonly service: string;
}

const SPAN_KIND_SERVER = 2;
const CALLER_TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN_ID = '00f067aa0ba902b7';

/** An OTLP/HTTP collector on loopback that keeps every span it is sent as JSON. */
function startCollector(): Promise<{ server: Server; url: string; spans: ExportedSpan[] }> {
  const spans: ExportedSpan[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.url === '/v1/traces') {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        for (const resourceSpans of body.resourceSpans ?? []) {
          const service = resourceSpans.resource.attributes.find((a: { key: string }) => a.key === 'service.name')?.value.stringValue;
          for (const scopeSpans of resourceSpans.scopeSpans) for (const span of scopeSpans.spans) spans.push({ ...span, scope: scopeSpans.scope.name, service });
        }
      }
      res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans })));
}

let collector: Awaited<ReturnType<typeof startCollector>>;
let readApi: ChildProcess;
let baseUrl: string;

// read-api started exactly as a pod starts it (`--import @reviews/runtime/instrumentation`, OTEL_*
// variables only), exporting to a collector on loopback: the preload's hook must still instrument
// express, and the runtime's own request span must reach the exporter.
beforeAll(async () => {
  collector = await startCollector();
  const port = await freePort();
  baseUrl = `http://127.0.0.1:${port}`;
  readApi = spawn(process.execPath, ['--import', '@reviews/runtime/instrumentation', join(repoRoot, 'services/read-api/dist/main.js')], {
    cwd: repoRoot,
    env: {
      PATH: process.env.PATH,
      PORT: String(port),
      METRICS_PORT: '0',
      BASE_URL: 'http://reviews.test',
      LOG_LEVEL: 'warn',
      OTEL_SERVICE_NAME: 'read-api-preload-test',
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_METRICS_EXPORTER: 'none',
      OTEL_LOGS_EXPORTER: 'none',
      OTEL_BSP_SCHEDULE_DELAY: '50',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  await eventually(async () => (await fetch(`${baseUrl}/readyz`)).ok, { timeoutMs: 30_000, intervalMs: 100 });
}, 40_000);

afterAll(async () => {
  await stopChild(readApi);
  await new Promise((resolve) => collector.server.close(resolve));
});

describe('the instrumentation preload in a running service', () => {
  /** The runtime's SERVER span of the request that sent the caller's trace id: the root of a trace of its own, linked to the caller's span. */
  const serverSpanLinkedTo = (traceId: string): ExportedSpan => {
    const found = collector.spans.find((span) => span.kind === SPAN_KIND_SERVER && span.scope === 'public-reviews' && span.links?.some((link) => link.traceId === traceId && link.spanId === CALLER_SPAN_ID));
    if (found === undefined) throw new Error(`no SERVER span linked to ${traceId} yet`);
    return found;
  };

  it("exports the runtime's SERVER span and express's spans in one trace, linked to the caller's", async () => {
    const response = await fetch(`${baseUrl}/api/reviews/since/2020-01-01`, { headers: { traceparent: `00-${CALLER_TRACE_ID}-${CALLER_SPAN_ID}-01` } });
    expect(response.status).toBe(200);

    const server = await eventually(() => serverSpanLinkedTo(CALLER_TRACE_ID), { timeoutMs: 10_000 });
    expect(server).toMatchObject({ name: 'GET /api/reviews/since/:date', service: 'read-api-preload-test' });
    expect(server.parentSpanId ?? '').toBe('');
    expect(collector.spans.some((span) => span.traceId === CALLER_TRACE_ID)).toBe(false);
    const inTrace = () => collector.spans.filter((span) => span.traceId === server.traceId);
    await eventually(() => expect(inTrace().some((span) => span.scope === '@opentelemetry/instrumentation-express')).toBe(true), { timeoutMs: 10_000 });
    // Express's spans hang under the request's span (or under each other), never start a trace.
    const ids = new Set(inTrace().map((span) => span.spanId));
    for (const span of inTrace().filter((s) => s.scope === '@opentelemetry/instrumentation-express')) expect(ids.has(span.parentSpanId ?? '')).toBe(true);
  });

  it('traces a request refused before any route, linked to its caller', async () => {
    const traceId = '5cf92f3577b34da6a3ce929d0e0e4737';
    const response = await fetch(`${baseUrl}/reviews.json?v=%ZZ`, { headers: { traceparent: `00-${traceId}-${CALLER_SPAN_ID}-01` } });
    expect(response.status).toBe(400);
    await eventually(() => expect(serverSpanLinkedTo(traceId)).toMatchObject({ name: 'GET unmatched', kind: SPAN_KIND_SERVER }), { timeoutMs: 10_000 });
  });

  it('traces the precomputed documents, which never reach express', async () => {
    const response = await fetch(`${baseUrl}/reviews.json`);
    expect(response.status).toBe(200);
    await eventually(() => expect(collector.spans.some((span) => span.name === 'GET /reviews.json' && span.kind === SPAN_KIND_SERVER && !span.parentSpanId)).toBe(true), { timeoutMs: 10_000 });
  });
});
