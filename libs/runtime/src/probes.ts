import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendJson } from './http/errors.js';
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
export const READY_PATH = '/readyz';

/**
 * Liveness (`/healthz`: the process answers) and readiness (`/readyz`: a dataset is loaded and the
 * process is not shutting down) in front of a service handler. A NATS outage fails neither: the last
 * snapshot keeps being served.
 */
export function withProbes(handler: RequestHandler, readiness: () => Readiness, isShuttingDown: () => boolean): RequestHandler {
  return (req: IncomingMessage, res: ServerResponse) => {
    const path = pathOf(req.url);
    if (path === HEALTH_PATH) {
      sendJson(res, 200, { status: 'ok' });
      return;
    }
    if (path === READY_PATH) {
      const state = readiness();
      const shuttingDown = isShuttingDown();
      const ready = state.ready && !shuttingDown;
      const status = shuttingDown ? 'shutting_down' : ready ? 'ready' : 'not_ready';
      sendJson(res, ready ? 200 : 503, { status, version: state.version, publishedAt: state.publishedAt, source: state.source, lastRejection: state.lastRejection });
      return;
    }
    handler(req, res);
  };
}
