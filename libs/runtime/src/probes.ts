import type { IncomingMessage, ServerResponse } from 'node:http';
import type { HealthStatus, ReadinessStatus } from '@reviews/domain';
import { READ_METHODS, sendJson, sendMethodNotAllowed } from './http/errors.js';
import { sendPreflight } from './http/cors.js';
import type { RequestHandler } from './http/server.js';
import { pathOf } from './http/server.js';

/** What /readyz reports; structurally the dataset follower's health. */
export interface Readiness {
  readonly ready: boolean;
  readonly version: string | null;
  readonly publishedAt: string | null;
  readonly source: { readonly connected: boolean; readonly detail: string };
  readonly lastRejection: string | null;
}

export const HEALTH_PATH = '/healthz';
const HEALTHY: HealthStatus = { status: 'ok' };
export const READY_PATH = '/readyz';

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
      sendJson(res, 200, HEALTHY);
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
      sendJson(res, ready ? 200 : 503, body);
      return;
    }
    handler(req, res);
  };
}
