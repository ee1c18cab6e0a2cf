import type { IncomingMessage, ServerResponse } from 'node:http';
import { PATHS, type HealthStatus, type ReadinessStatus } from '@reviews/domain';
import { preconditionWithoutValidators } from './http/conditional.js';
import { READ_METHODS, sendError, sendJson, sendMethodNotAllowed } from './http/errors.js';
import { sendPreflight, setCorsHeaders } from './http/cors.js';
import type { RequestHandler } from './http/server.js';
import { pathOf } from './http/server.js';

/** What /readyz reports (its schema's fields, with `ready` for the status); structurally the dataset follower's health. */
export type Readiness = Readonly<Omit<ReadinessStatus, 'status'>> & { readonly ready: boolean };

export const HEALTH_PATH = PATHS.health;
const HEALTHY: HealthStatus = { status: 'ok' };
export const READY_PATH = PATHS.ready;

/** A probe's answer: preconditions apply to its 200 as to any 2xx, though it has no validators (RFC 9110 §13.2.1). */
function sendProbe(req: IncomingMessage, res: ServerResponse, status: number, body: HealthStatus | ReadinessStatus): void {
  const precondition = status === 200 ? preconditionWithoutValidators(req.headers) : null;
  if (precondition === 412) {
    sendError(res, 412, 'precondition_failed', 'If-Match lists entity tags, and a probe\'s answer has none.');
  } else if (precondition === 304) {
    res.statusCode = 304;
    setCorsHeaders(res);
    res.setHeader('Cache-Control', 'no-store');
    res.end();
  } else {
    sendJson(res, status, body);
  }
}

/**
 * Liveness (`/healthz`: the process answers) and readiness (`/readyz`: a dataset is loaded and the
 * process is not shutting down) in front of a service handler. A NATS outage fails neither: the last
 * snapshot keeps being served.
 */
export function withProbes(handler: RequestHandler, readiness: () => Readiness, isShuttingDown: () => boolean): RequestHandler {
  return (req: IncomingMessage, res: ServerResponse) => {
    const path = pathOf(req.url);
    if ((path === HEALTH_PATH || path === READY_PATH) && req.method !== 'GET' && req.method !== 'HEAD') {
      if (req.method === 'OPTIONS') sendPreflight(req, res, READ_METHODS);
      else sendMethodNotAllowed(res);
      return;
    }
    if (path === HEALTH_PATH) {
      sendProbe(req, res, 200, HEALTHY);
      return;
    }
    if (path === READY_PATH) {
      const state = readiness();
      const shuttingDown = isShuttingDown();
      const ready = state.ready && !shuttingDown;
      const body: ReadinessStatus = {
        status: shuttingDown ? 'shutting_down' : ready ? 'ready' : 'not_ready',
        version: state.version,
        publishedAt: state.publishedAt,
        source: { connected: state.source.connected, detail: state.source.detail },
        lastRejection: state.lastRejection,
      };
      sendProbe(req, res, ready ? 200 : 503, body);
      return;
    }
    handler(req, res);
  };
}
