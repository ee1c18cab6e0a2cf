import { ClosedConnectionError, ConnectionError, NoRespondersError, RequestError, TimeoutError } from '@nats-io/transport-node';
import { JetStreamApiError, JetStreamError } from '@nats-io/jetstream';
import type { Logger } from '@reviews/runtime';

/**
 * What the NATS client throws while the server is unreachable, restarting or recovering JetStream
 * ("server shutdown", "heartbeats missed", timeouts, no responders): an outage, not a bug.
 */
const OUTAGE_ERRORS = [JetStreamError, JetStreamApiError, ConnectionError, ClosedConnectionError, RequestError, TimeoutError, NoRespondersError];

export interface OutageLog {
  failed(error: unknown): void;
  succeeded(): void;
}

/**
 * Logs an outage as a task retried on its own sees it (`activity`: "pulling delivery jobs"): the
 * first failure at warn, each further one at debug only, and the first success after them at info
 * with how many attempts failed and for how long. A warning per retry would bury everything else
 * for as long as NATS is down.
 */
export function outageLog(logger: Logger, activity: string): OutageLog {
  let outage: { readonly since: number; attempts: number } | null = null;
  return {
    failed(error) {
      // An outage error's stack is the client's internals; anything else may be a bug and keeps it.
      const fields = OUTAGE_ERRORS.some((type) => error instanceof type) ? { error: outageError(error as Error) } : { err: error };
      if (outage) {
        outage.attempts++;
        logger.debug({ ...fields, attempts: outage.attempts }, `${activity} still failing`);
        return;
      }
      outage = { since: performance.now(), attempts: 1 };
      logger.warn(fields, `${activity} failed; retrying`);
    },
    succeeded() {
      if (!outage) return;
      logger.info({ attempts: outage.attempts, failedForMs: Math.round(performance.now() - outage.since) }, `${activity} works again`);
      outage = null;
    },
  };
}

function outageError(error: Error): { type: string; message: string; code?: unknown } {
  // A status error carries the server's status (409 "server shutdown"), an API error JetStream's error code.
  const { code } = error as { code?: unknown };
  return code === undefined ? { type: error.name, message: error.message } : { type: error.name, message: error.message, code };
}
