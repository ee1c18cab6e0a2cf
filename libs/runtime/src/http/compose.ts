import type { RequestHandler } from './server.js';
import { pathOf } from './server.js';

/** Exact request path -> handler, e.g. `{ '/mcp': mcp, '/api/websub/hub': hub }`. */
export type RouteTable = Readonly<Record<string, RequestHandler>>;

/**
 * The ingress in one process: a request whose path is in the table goes to that handler, anything
 * else to the fallback (the read API), exactly as the Kubernetes ingress splits traffic.
 */
export function composeRoutes(routes: RouteTable, fallback: RequestHandler): RequestHandler {
  const table = new Map(Object.entries(routes));
  return (req, res) => {
    const handler = table.get(pathOf(req.url)) ?? fallback;
    handler(req, res);
  };
}
