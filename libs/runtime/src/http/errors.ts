import type { ServerResponse } from 'node:http';
import type { ErrorEnvelope, Issue } from '@reviews/domain';
import { JSON_CONTENT_TYPE } from '@reviews/domain';
import { setCorsHeaders } from './cors.js';

function errorEnvelope(error: string, message: string, issues?: readonly Issue[]): ErrorEnvelope {
  return issues === undefined ? { error, message } : { error, message, issues: [...issues] };
}

/** Writes a JSON body with the byte-exact `application/json` type (never `; charset=utf-8`). */
export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const bytes = Buffer.from(JSON.stringify(body), 'utf8');
  res.statusCode = status;
  setCorsHeaders(res);
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  res.setHeader('Content-Type', JSON_CONTENT_TYPE);
  res.setHeader('Content-Length', bytes.length);
  res.setHeader('Cache-Control', 'no-store');
  res.end(bytes);
}

/** The one error shape of the REST side: `{ error, message, issues? }`. */
export function sendError(res: ServerResponse, status: number, error: string, message: string, options: { issues?: readonly Issue[]; headers?: Record<string, string> } = {}): void {
  sendJson(res, status, errorEnvelope(error, message, options.issues), options.headers);
}

export const READ_METHODS = 'GET, HEAD, OPTIONS';
/** A server with a POST endpoint (MCP, the WebSub hub) beside its probes: what its `OPTIONS *` lists. */
export const READ_AND_POST_METHODS = `${READ_METHODS}, POST`;

export function sendNotFound(res: ServerResponse): void {
  sendError(res, 404, 'not_found', 'No resource at this path.');
}

export function sendMethodNotAllowed(res: ServerResponse, allow: string = READ_METHODS): void {
  sendError(res, 405, 'method_not_allowed', `Allowed methods: ${allow}.`, { headers: { Allow: allow } });
}
