import { once } from 'node:events';
import { Server as NetServer, type AddressInfo, type Socket } from 'node:net';
import type { Server } from 'node:http';
import { createServer } from 'node:http';
import type { Logger } from './logger.js';
import { Counter, registeredOnce, type Metrics } from './metrics.js';
import { createHttpServer, pathOf, responseOf, type RequestHandler } from './http/server.js';
import { observeRequest, UNMATCHED_ROUTE } from './http/observe.js';
import { sendNotFound } from './http/errors.js';
import { isLingering } from './http/lingering-close.js';
import { withProbes, type Readiness } from './probes.js';
import { traceRequests } from './http/trace-requests.js';
import { tracingEnabled } from './tracing.js';
import { ConfigError } from './config.js';

export type CloseHook = () => Promise<void> | void;

/** Close hooks always get at least this long, even when in-flight requests used up SHUTDOWN_TIMEOUT_MS. */
const CLOSE_HOOKS_FLOOR_MS = 1_000;

/**
 * Requests node:http could not parse (a broken header line, 431, an unknown method, 505, a timeout):
 * no method or route to put in http_request_duration_seconds, and no duration worth the name, so
 * they are counted apart.
 */
function unparsedRequestsCounter({ registry }: Metrics): Counter<'service' | 'status_code'> {
  const name = 'http_requests_unparsed_total';
  return registeredOnce(
    registry,
    name,
    () => new Counter({ name, help: 'Requests refused while parsing, before any route: by service and the status answered.', labelNames: ['service', 'status_code'] as const, registers: [registry] }),
  );
}

export interface HttpServiceOptions {
  readonly service: string;
  readonly port: number;
  readonly metricsPort: number;
  /** HOST: the address to listen on; unset, every interface. */
  readonly host?: string;
  readonly shutdownTimeoutMs: number;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly handler: RequestHandler;
  /** The methods some resource of the service takes, listed by `OPTIONS *`; the read methods unless given. */
  readonly allow?: string;
  readonly readiness: () => Readiness;
  /** Install SIGTERM/SIGINT handlers (the process entry points do; tests do not). */
  readonly handleSignals?: boolean;
}

export interface HttpService {
  readonly server: Server;
  readonly metricsServer: Server;
  /** e.g. http://127.0.0.1:8080 */
  readonly url: string;
  readonly metricsUrl: string;
  /**
   * Runs the moment shutdown begins, while in-flight requests are still being answered: stop taking
   * work that does not arrive over HTTP (dataset changes), so whatever comes from now on is left to
   * the next instance. These hooks run together; close hooks wait for them.
   */
  onStopAcceptingWork(hook: CloseHook): void;
  /** Runs at shutdown after the HTTP server stopped, in reverse registration order. */
  onClose(hook: CloseHook): void;
  /**
   * Fails readiness, stops accepting connections and other work, lets in-flight requests finish,
   * runs close hooks; all within shutdownTimeoutMs (close hooks get at least 1 s). Idempotent.
   */
  shutdown(reason?: string): Promise<void>;
}

function urlOf(server: Server): string {
  const { address, port } = server.address() as AddressInfo;
  return `http://${address.includes(':') ? `[${address}]` : address}:${port}`;
}

/**
 * Stops accepting connections and ends each open one once the response it is sending is sent.
 * node:http's own `server.close()` destroys every connection it deems idle, and it deems idle one
 * whose response is ended but still being written (a large body to a slow client): that body would
 * be cut off at SIGTERM. So the listener is closed as a plain net.Server, and connections are ended
 * here; the server's 'close' follows the last of them. A connection lingering after a refused body
 * (closeAfterLingering) ends itself within its own bounds, and the shutdown deadline bounds it too.
 */
function stopAcceptingAndEndConnections(server: Server, connections: ReadonlySet<Socket>, deadline: number): void {
  NetServer.prototype.close.call(server);
  for (const socket of connections) endWhenSent(socket, deadline);
}

/**
 * How long a connection idle at shutdown stays open for a request its client may be sending already.
 * A keep-alive client sends its next request the moment a response arrives, and one closed then
 * reset the request on the wire: an audit's 16 connections looping on GET each lost one at SIGTERM.
 * Within the grace such a request is served with `Connection: close`, and the client reconnects to
 * another replica. A short SHUTDOWN_TIMEOUT_MS shortens it.
 */
const IDLE_GRACE_MS = 1_000;

function endWhenSent(socket: Socket, deadline: number): void {
  const response = responseOf(socket);
  if (response) {
    // Its 'close' comes once the last byte was handed to the kernel (or the client left).
    response.once('close', () => endWhenSent(socket, deadline));
    return;
  }
  // Destroyed now, it would be reset with the refused body's bytes unread, and the client might never read its 413.
  if (isLingering(socket)) return;
  // Idle. A request arriving within the grace is answered with `Connection: close`, after which
  // node:http ends the connection itself; otherwise it is destroyed, everything written already
  // handed to the kernel, which still delivers it after the close.
  const grace = setTimeout(() => {
    if (responseOf(socket)) endWhenSent(socket, deadline);
    else socket.destroy();
    // Half the time left at most: the connection must be gone before the deadline takes it as stuck.
  }, Math.min(IDLE_GRACE_MS, (deadline - Date.now()) / 2));
  socket.once('close', () => clearTimeout(grace));
}

/**
 * Serves `/metrics` from the process registry on its own port, away from public traffic. A query
 * string is ignored: a scrape config may add `params`.
 */
function createMetricsServer(metrics: Metrics, logger: Logger): Server {
  return createServer((req, res) => {
    if (pathOf(req.url) !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      sendNotFound(res);
      return;
    }
    metrics.registry.metrics().then(
      (text) => {
        res.setHeader('Content-Type', metrics.registry.contentType);
        res.end(text);
      },
      (error: unknown) => {
        // A collector failed: say which, or the scrape's 500 leaves nothing to go on.
        logger.error({ err: error }, 'metrics exposition failed');
        res.statusCode = 500;
        res.end();
      },
    );
  });
}

/** Why a listen failed, for the errors that are the configuration's (a taken port, an address not this host's). */
const LISTEN_PROBLEMS: Record<string, string> = {
  EADDRINUSE: 'is already in use (another process listens there)',
  EACCES: 'needs privileges this process lacks (ports below 1024)',
  EADDRNOTAVAIL: 'is not an address of this host',
  ENOTFOUND: 'does not resolve to an address',
  EAI_AGAIN: 'could not be resolved (DNS did not answer)',
};

/** A listen failing for a configured value ends start-up as a ConfigError naming the variable, not as a stack trace. */
async function listen(server: Server, port: { name: 'PORT' | 'METRICS_PORT'; value: number }, host: string | undefined): Promise<void> {
  server.listen(port.value, host);
  try {
    await once(server, 'listening');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? '';
    const problem = LISTEN_PROBLEMS[code];
    if (problem === undefined) throw error;
    const where = host === undefined ? 'on every interface' : `on ${host}`;
    throw new ConfigError([
      code === 'EADDRINUSE' || code === 'EACCES' ? `${port.name}: port ${port.value} ${where} ${problem}` : `HOST: ${host} ${problem} (${code}); unset, the service listens on every interface`,
    ]);
  }
}

/**
 * The HTTP bootstrap every service shares: probes in front of the handler, the metrics server, and
 * graceful shutdown on SIGTERM/SIGINT within SHUTDOWN_TIMEOUT_MS.
 */
export async function startHttpService(options: HttpServiceOptions): Promise<HttpService> {
  const { logger } = options;
  let shuttingDown = false;
  const stopWorkHooks: CloseHook[] = [];
  const hooks: CloseHook[] = [];
  // Off (no OTEL_* exporter): the handler runs bare, not even a no-op span per request.
  const traced = tracingEnabled() ? traceRequests : (handler: RequestHandler) => handler;
  const serve = traced(options.handler);
  const probed = withProbes(serve, options.readiness, () => shuttingDown);
  const handler: RequestHandler = (req, res) => {
    // Keep-alive clients must reconnect (to another replica) once this one is draining.
    if (shuttingDown) res.setHeader('Connection', 'close');
    probed(req, res);
  };
  const unparsed = unparsedRequestsCounter(options.metrics);
  const server = createHttpServer(handler, {
    // Refused requests get their span and log ids too: "every request on the service port" is traced.
    observeRefused: traced((req, res) => observeRequest(options.metrics, options.service, req, res, UNMATCHED_ROUTE, logger)),
    observeUnparsed: (status) => unparsed.inc({ service: options.service, status_code: String(status) }),
    ...(options.allow === undefined ? {} : { allow: options.allow }),
  });
  /** Open connections, for the drain to end each when its response is sent. */
  const connections = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    connections.add(socket);
    socket.once('close', () => connections.delete(socket));
  });
  const metricsServer = createMetricsServer(options.metrics, logger);
  await listen(server, { name: 'PORT', value: options.port }, options.host);
  await listen(metricsServer, { name: 'METRICS_PORT', value: options.metricsPort }, options.host).catch((error: unknown) => {
    server.close();
    throw error;
  });

  const runHook = async (hook: CloseHook): Promise<void> => {
    try {
      await hook();
    } catch (error) {
      logger.error({ err: error }, 'close hook failed');
    }
  };

  let shutdownPromise: Promise<void> | null = null;
  const drain = async (reason: string) => {
    shuttingDown = true;
    logger.info({ reason }, 'shutting down');
    const deadline = Date.now() + options.shutdownTimeoutMs;
    // Started before anything is awaited: a dataset change that lands while in-flight requests drain
    // must not start a fan-out here that the next instance repeats.
    const workStopped = Promise.all(stopWorkHooks.map(runHook));
    const closed = once(server, 'close');
    stopAcceptingAndEndConnections(server, connections, deadline);
    const timer = setTimeout(() => {
      logger.warn({ timeoutMs: options.shutdownTimeoutMs }, 'in-flight requests did not finish in time; closing connections');
      // Every connection the server accepted, which its 'close' waits for: closeAllConnections() ends
      // only those node:http still tracks, and it lets go of one that sent CONNECT.
      for (const socket of connections) socket.destroy();
    }, options.shutdownTimeoutMs);
    await closed;
    clearTimeout(timer);
    const runHooks = async () => {
      await workStopped;
      for (const hook of hooks.reverse()) await runHook(hook);
      return 'done' as const;
    };
    // The hooks (hub deliveries in flight, NATS drain) share the same deadline, with a floor so they
    // always get to release their work; past it the process stops anyway and NATS redelivers whatever
    // was left unacknowledged to another replica.
    let expiry: NodeJS.Timeout | undefined;
    const outOfTime = new Promise<'timeout'>((resolve) => {
      expiry = setTimeout(() => resolve('timeout'), Math.max(deadline - Date.now(), CLOSE_HOOKS_FLOOR_MS));
    });
    if ((await Promise.race([runHooks(), outOfTime])) === 'timeout') {
      logger.warn({ timeoutMs: options.shutdownTimeoutMs }, 'close hooks did not finish in time; stopping anyway (unacknowledged NATS work is redelivered)');
    }
    clearTimeout(expiry);
    metricsServer.close();
    metricsServer.closeAllConnections();
    logger.info('stopped');
  };
  const shutdown = (reason = 'shutdown') => (shutdownPromise ??= drain(reason));

  if (options.handleSignals) {
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      process.once(signal, () => {
        void shutdown(signal).then(() => process.exit(0));
      });
    }
  }
  const service: HttpService = {
    server,
    metricsServer,
    url: urlOf(server),
    metricsUrl: urlOf(metricsServer),
    onStopAcceptingWork: (hook) => {
      stopWorkHooks.push(hook);
    },
    onClose: (hook) => {
      hooks.push(hook);
    },
    shutdown,
  };
  logger.info({ url: service.url, metricsUrl: service.metricsUrl }, `${options.service} listening`);
  return service;
}
