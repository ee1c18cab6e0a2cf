import { once } from 'node:events';
import { request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { pino } from 'pino';
import type { Response } from 'supertest';
import { buildSnapshot, type DatasetInput, type Snapshot } from '@reviews/domain';
import { createHttpServer, createMetrics, type Metrics } from '@reviews/runtime';
import { createReadApi } from '@reviews/read-api';
import { buildDataset } from '../../../libs/domain/test/fixtures.js';

export const BASE_URL = 'https://reviews.example.com';
export const PUBLISHED_AT = new Date('2025-07-01T12:00:00.000Z');

export function snapshotOf(input: DatasetInput, publishedAt: Date = PUBLISHED_AT): Snapshot {
  const result = buildSnapshot(input, { baseUrl: BASE_URL, publishedAt });
  if (!result.ok) throw new Error(`fixture is invalid: ${JSON.stringify(result.issues)}`);
  return result.snapshot;
}

export interface TestApi {
  readonly server: Server;
  readonly metrics: Metrics;
  readonly snapshot: Snapshot;
  /** Replace what the API serves (null = no dataset loaded). */
  serve(next: Snapshot | null): void;
}

/** The read API over a fixture dataset, behind the hardened server, as the services run it. */
export function startTestApi(input: DatasetInput = buildDataset({ reviews: 120, seed: 11 })): TestApi {
  const snapshot = snapshotOf(input);
  let current: Snapshot | null = snapshot;
  const metrics = createMetrics();
  const handler = createReadApi({ logger: pino({ level: 'silent' }), metrics, snapshots: { current: () => current } });
  return {
    server: createHttpServer(handler),
    metrics,
    snapshot,
    serve: (next) => {
      current = next;
    },
  };
}

/** Listens on an ephemeral loopback port; returns the base URL. */
export async function listen(server: Server): Promise<string> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

export async function close(server: Server): Promise<void> {
  server.close();
  server.closeAllConnections();
  await once(server, 'close');
}

export interface RawResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  /** Bytes exactly as sent (HTTP clients such as supertest decompress transparently). */
  readonly body: Buffer;
}

/** A request with node:http, keeping the body exactly as it came over the wire. */
export function rawRequest(url: string, path: string, headers: Record<string, string | string[]> = {}, method = 'GET'): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${url}${path}`, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

export function decoded(res: RawResponse): Buffer {
  switch (res.headers['content-encoding']) {
    case 'br':
      return brotliDecompressSync(res.body);
    case 'gzip':
      return gunzipSync(res.body);
    default:
      return res.body;
  }
}

/** Asserts the REST error envelope and returns it. */
export function expectEnvelope(res: Response, status: number, error?: string): { error: string; message: string; issues?: Array<{ code: string; path: Array<string | number>; message: string }> } {
  if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${res.text}`);
  if (res.headers['content-type'] !== 'application/json') throw new Error(`content-type ${res.headers['content-type']}`);
  const body = res.body as { error: string; message: string };
  if (typeof body.error !== 'string' || typeof body.message !== 'string') throw new Error(`not an envelope: ${res.text}`);
  if (error !== undefined && body.error !== error) throw new Error(`expected error ${error}, got ${body.error}`);
  return body;
}
