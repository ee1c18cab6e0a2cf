import type { SnapshotFollower } from '@reviews/dataset-store';
import { createMcpGateway, MCP_PATH } from '@reviews/mcp-gateway';
import { createReadApi } from '@reviews/read-api';
import { createStandaloneWebSubHub, HUB_ROUTE } from '@reviews/websub-hub';
import { composeRoutes, READ_AND_POST_METHODS, type Config, type Logger, type Metrics, type RequestHandler, type RouteTable } from '@reviews/runtime';

export interface StandaloneDeps {
  readonly config: Config;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly snapshots: SnapshotFollower;
}

export interface StandaloneApp {
  readonly handler: RequestHandler;
  /** What `OPTIONS *` lists: the read API's methods and the POST of MCP and the hub. */
  readonly allow: string;
  /** The moment shutdown begins: the hub starts no more deliveries while requests drain. */
  stopTakingWork(): void;
  /** Stops what the composed services started (sessions, delivery workers). */
  close(): Promise<void>;
}

/**
 * All services in one process behind one port, routed like the ingress: the paths in `routes` go
 * to their service, everything else to the read API.
 */
export async function createStandaloneApp(deps: StandaloneDeps): Promise<StandaloneApp> {
  const { logger, metrics, snapshots } = deps;
  // Built first: it validates MCP_SESSION_SECRET / MCP_ALLOWED_ORIGINS before anything starts.
  const mcp = createMcpGateway({ config: deps.config, logger: logger.child({ component: 'mcp-gateway' }), metrics, snapshots });
  // WebSub: subscriptions in DATA_DIR, delivery in process; follows the same snapshots as the read API.
  const hub = await createStandaloneWebSubHub({ config: deps.config, logger: logger.child({ component: 'websub-hub' }), metrics, snapshots });
  await hub.start();
  const routes: RouteTable = {
    [HUB_ROUTE]: hub.handler,
    [MCP_PATH]: mcp,
  };
  const readApi = createReadApi({ logger: logger.child({ component: 'read-api' }), metrics, snapshots });
  return {
    handler: composeRoutes(routes, readApi),
    allow: READ_AND_POST_METHODS,
    stopTakingWork: () => hub.stopTakingWork(),
    close: () => hub.close(),
  };
}
