import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Metrics } from '../metrics.js';

/** Route label for paths that match no route: keeps label cardinality bounded. */
export const UNMATCHED_ROUTE = 'unmatched';

/**
 * Records `http_request_duration_seconds` when the response finishes (or the client goes away).
 * `route` is a template such as `/api/reviews/since/:date`, never the raw path.
 */
export function observeRequest(metrics: Metrics, service: string, req: IncomingMessage, res: ServerResponse, route: string): void {
  const end = metrics.httpDuration.startTimer({ service, method: req.method ?? 'UNKNOWN', route });
  let recorded = false;
  const record = () => {
    if (recorded) return;
    recorded = true;
    end({ status_code: String(res.statusCode) });
  };
  res.once('finish', record);
  res.once('close', record);
}
