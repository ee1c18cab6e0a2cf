import type { ServerResponse } from 'node:http';
import express from 'express';
import { ClientRequestSchema, type JSONRPCRequest, type RequestId } from '@modelcontextprotocol/sdk/types.js';
import { JSON_CONTENT_TYPE } from '@reviews/domain';
import type { Logger } from '@reviews/runtime';

// The transport rules of POST /mcp that both the SDK path (express) and the tools/call fast path apply:
// one implementation of each, so the two paths cannot drift apart.

/** Largest accepted POST body. Tool arguments are a few short strings; 64 KiB leaves ample room. */
export const MAX_BODY_BYTES = 64 * 1024;

const EXPOSED_HEADERS = 'Mcp-Session-Id';

/** The one JSON body parser (a connect middleware, so it also runs on a bare node:http request). */
export const parseJsonBody = express.json({ limit: MAX_BODY_BYTES });

/** The schema of each MCP request method, by method name. */
const REQUEST_SCHEMAS = new Map<string, (typeof ClientRequestSchema.options)[number]>(ClientRequestSchema.options.map((schema) => [schema.shape.method.value, schema]));

/**
 * JSON-RPC 2.0 "Invalid params" (-32602) message for a known method whose params do not fit its schema,
 * else null. The SDK would throw the raw zod error from inside its handler, answered as -32603 Internal error.
 */
export function invalidParams(message: JSONRPCRequest): string | null {
  const result = REQUEST_SCHEMAS.get(message.method)?.safeParse(message);
  if (result === undefined || result.success) return null;
  const problems = result.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
  return `Invalid params for ${message.method}: ${problems.join('; ')}`;
}

export function rpcError(res: ServerResponse, status: number, code: number, message: string, id: RequestId | null = null): void {
  // Plain node:http calls: express's res.json/res.set would send "application/json; charset=utf-8" and a
  // weak ETag, unlike the SDK's answers and every other JSON response of the service.
  const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id }));
  res.statusCode = status;
  res.setHeader('Content-Type', JSON_CONTENT_TYPE);
  res.setHeader('Content-Length', body.length);
  res.end(body);
}

/** Whether an Accept header lists both media types MCP streamable HTTP requires (parameters ignored, case-insensitive). */
export function acceptsMcpResponses(accept: string | undefined): boolean {
  const accepted = new Set((accept ?? '').split(',').map((part) => (part.split(';')[0] ?? '').trim().toLowerCase()));
  return accepted.has('application/json') && accepted.has('text/event-stream');
}

/** CORS headers for an allowed browser origin, on every answer (errors included), so a page can read the session id. */
export function exposeToOrigin(res: ServerResponse, origin: string): void {
  res.setHeader('Vary', 'Origin');
  res.setHeader('Access-Control-Allow-Origin', origin);
  res.setHeader('Access-Control-Expose-Headers', EXPOSED_HEADERS);
}

/** Body-parser failures as JSON-RPC errors, never express's HTML page. */
export function answerBodyError(error: { type?: string; status?: number }, res: ServerResponse, logger: Logger): void {
  if (error.type === 'entity.parse.failed') return rpcError(res, 400, -32700, 'Parse error: the body is not valid JSON');
  if (error.type === 'entity.too.large') return rpcError(res, 413, -32600, `Payload Too Large: request bodies are limited to ${MAX_BODY_BYTES} bytes`);
  const status = error.status !== undefined && error.status >= 400 && error.status < 500 ? error.status : 500;
  if (status === 500) logger.error({ err: error }, 'MCP request failed');
  rpcError(res, status, status === 500 ? -32603 : -32600, status === 500 ? 'Internal error' : `Bad Request: ${error.type ?? 'unreadable body'}`);
}
