import type { IncomingMessage, ServerResponse } from 'node:http';
import express, { type NextFunction, type Request, type Response } from 'express';
import { StreamableHTTPServerTransport, type StreamableHTTPServerTransportOptions } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  isInitializeRequest,
  isJSONRPCErrorResponse,
  isJSONRPCRequest,
  type JSONRPCMessage,
  type JSONRPCRequest,
  type JSONRPCResultResponse,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import { MAX_MCP_BODY_BYTES, PATHS, publicUrls, type Snapshot } from '@reviews/domain';
import type { SnapshotFollower } from '@reviews/dataset-store';
import {
  createRateLimiter,
  inRequestSpan,
  observeRequest,
  requestedHeaders,
  requesterKey,
  sendNotFound,
  splitTarget,
  UNMATCHED_ROUTE,
  type Config,
  type Logger,
  type Metrics,
  type RequestHandler,
} from '@reviews/runtime';
import { answerBatch, jsonArray, parseBatch } from './batch.js';
import {
  acceptsMcpResponses,
  allowsBatches,
  answerBodyError,
  invalidMessageReason,
  refusedRequestId,
  exposeToOrigin,
  invalidParams,
  markUncacheable,
  normalizeHeadersForSdk,
  parseJsonBody,
  negotiatedProtocolVersion,
  parseMessage,
  requestProtocolVersion,
  rpcError,
  rpcErrorResponse,
  sendRpcJson,
  sendRpcBody,
  type BodyError,
  type RpcErrorResponse,
} from './http-rules.js';
import { createGatewayMetrics, SERVICE_NAME, type GatewayMetrics } from './metrics.js';
import { createOriginPolicy } from './origins.js';
import { promptProblem } from './prompts.js';
import { buildMcpServer, toolError } from './server.js';
import { sendMemoizedAnswer } from './gzip-answers.js';
import { createMemoizedLists } from './memoized-lists.js';
import { createMemoizedToolCalls, responseTail, wholeResponse } from './memoized-tool-calls.js';
import { createSessionIds, type SessionIds } from './session-id.js';
import { resolveSessionSecret } from './session-secret.js';
import { createToolCallFastPath } from './tool-call-fast-path.js';
import { parseArguments, TOOLS_BY_NAME } from './tools.js';

export const MCP_PATH = PATHS.mcp;

/**
 * The headers a preflight that names none is granted: MCP's, and Content-Encoding, as a page may send its
 * body compressed (gzip, deflate, br, zstd). One that names its own gets those, as on every other path: a
 * page with OpenTelemetry's browser tracing sends `traceparent`, and a fixed list failed its every fetch.
 */
const MCP_REQUEST_HEADERS = 'Content-Type, Content-Encoding, Accept, Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID';
/** Every method /mcp serves, OPTIONS (CORS preflight) included: RFC 9110 §10.2.1, the same list on 405 and OPTIONS. */
const ALLOWED_METHODS = 'POST, OPTIONS';
/**
 * What a browser may send: POST, and DELETE so that a client ending its session can read the 405
 * saying sessions are not ended explicitly (MCP 2025-06-18 lets it go on); a preflight refusing
 * DELETE would fail its fetch as a network error instead. GET needs no preflight grant.
 */
const CORS_METHODS = 'POST, DELETE';

export interface McpGatewayDeps {
  readonly config: Pick<Config, 'BASE_URL' | 'NATS_URL' | 'DATA_DIR' | 'MCP_SESSION_SECRET' | 'MCP_ALLOWED_ORIGINS' | 'MCP_RATE_LIMIT_PER_MINUTE' | 'MCP_TRUSTED_PROXY_HOPS'>;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly snapshots: Pick<SnapshotFollower, 'current'>;
  /**
   * Tests only: false has the SDK answer every tool call (no fast path, no memoized results in batches), so the
   * answers with and without them can be compared.
   */
  readonly toolCallFastPath?: false;
}

/**
 * Counts the outcome of a tools/call the SDK answers by watching the response it sends for it: McpServer answers
 * some failures itself (a tool that throws, a result its output schema refuses) with an isError result.
 */
class ToolCallObservingTransport extends StreamableHTTPServerTransport {
  constructor(
    options: StreamableHTTPServerTransportOptions,
    private readonly observe: (message: JSONRPCMessage) => void,
  ) {
    super(options);
  }

  override async send(...args: Parameters<StreamableHTTPServerTransport['send']>): Promise<void> {
    this.observe(args[0]);
    await super.send(...args);
  }
}

/** The `tool` label of a tools/call: only known names become label values, so client input cannot grow the series count. */
function toolLabel(request: JSONRPCRequest): string {
  const name = request.params?.['name'];
  return typeof name === 'string' && TOOLS_BY_NAME.has(name) ? name : 'unknown';
}

function toolCallObserver(message: JSONRPCMessage, metrics: GatewayMetrics): (response: JSONRPCMessage | RpcErrorResponse) => void {
  if (!isJSONRPCRequest(message) || message.method !== 'tools/call') return () => undefined;
  const tool = toolLabel(message);
  return (response) => {
    if (!('id' in response) || response.id !== message.id) return;
    const failed = isJSONRPCErrorResponse(response) || ('result' in response && response.result['isError'] === true);
    metrics.toolCalls.inc({ tool, outcome: failed ? 'error' : 'ok' });
  };
}

/**
 * MCP 2025-06-18 (server/tools, Security): servers MUST rate limit tool invocations. Every POST counts,
 * whatever it asks (a resources/read of the dataset costs as much as a tool call), per client address
 * (an IPv6 /64; behind MCP_TRUSTED_PROXY_HOPS proxies, the X-Forwarded-For entry they vouch for), in
 * each replica. A fifth of the minute's allowance may come at once. True when the request was answered 429.
 */
function rateLimitedAnswer(config: McpGatewayDeps['config'], originAllowed: (origin: string) => boolean): (req: IncomingMessage, res: ServerResponse) => boolean {
  const perMinute = config.MCP_RATE_LIMIT_PER_MINUTE;
  if (perMinute === 0) return () => false;
  const limit = createRateLimiter({ perMinute, burst: Math.max(1, Math.floor(perMinute / 5)) });
  return (req, res) => {
    // A foreign Origin gets its 403 whatever the count; an allowed one can read the 429 and its Retry-After.
    const { origin } = req.headers;
    if (origin !== undefined && !originAllowed(origin)) return false;
    const decision = limit(requesterKey(req, config.MCP_TRUSTED_PROXY_HOPS));
    if (decision.allowed) return false;
    if (origin !== undefined) exposeToOrigin(res, origin);
    res.setHeader('Retry-After', String(decision.retryAfterSeconds));
    // A body within the MCP limit is read and dropped after the answer, keeping the connection; any other is not
    // read: a client past its allowance gets no lingering either (closeAfterLingering reads up to 32 MiB more).
    if (!(Number(req.headers['content-length']) <= MAX_MCP_BODY_BYTES)) res.setHeader('Connection', 'close');
    rpcError(res, 429, -32000, `Too Many Requests: more than ${perMinute} MCP requests a minute from this client; retry after ${decision.retryAfterSeconds} s`);
    return true;
  };
}

/**
 * POST /mcp (MCP 2025-06-18 streamable HTTP, JSON responses) as a node:http handler; other paths get
 * the JSON 404 envelope, so it can be composed at `/mcp` (composeRoutes) or serve a whole port.
 * Stateless, so any replica serves any session: a new McpServer and transport per POST; `initialize`
 * mints an HMAC-signed Mcp-Session-Id, every later request must carry a valid one (missing 400,
 * forged or foreign 404). See docs/adr/0003-mcp-sessions.md. A tools/call in a valid session takes the
 * fast path first (tool-call-fast-path.ts, docs/adr/0008-mcp-tool-call-fast-path.md), which answers
 * exactly as this SDK path would. JSON-RPC batches are served under the protocol versions that have
 * them (batch.ts) and refused under 2025-06-18 and later.
 */
export function createMcpGateway({ config, logger, metrics, snapshots, toolCallFastPath }: McpGatewayDeps): RequestHandler {
  const sessions: SessionIds = createSessionIds(resolveSessionSecret(config));
  const originAllowed = createOriginPolicy(config);
  const urls = publicUrls(config.BASE_URL);
  const gatewayMetrics = createGatewayMetrics(metrics);
  const toolCalls = toolCallFastPath === false ? null : createMemoizedToolCalls(gatewayMetrics);
  const lists = createMemoizedLists();

  /** What watches the SDK's response to a message: the tool-call count, and the list memo once the session's version is known. */
  function responseObserver(message: JSONRPCMessage, snapshot: Snapshot | null, version: string | null): (response: JSONRPCMessage | RpcErrorResponse) => void {
    const countToolCall = toolCallObserver(message, gatewayMetrics);
    if (version === null || !isJSONRPCRequest(message)) return countToolCall;
    return (response) => {
      countToolCall(response);
      lists.record(message, response, snapshot, version);
    };
  }

  /**
   * The protocol version of a request after initialize, once its session id verified; null after answering a
   * missing (400) or unknown (404) session id or an unsupported MCP-Protocol-Version (400, MCP 2025-06-18
   * basic/transports). Checked before the gateway's own answers (ownAnswer), so every body gets the same status.
   */
  function admit(req: Request, res: Response, requestId: RequestId | null): string | null {
    const sessionId = req.get('mcp-session-id');
    // node:http joins repeated field lines with ", ", which no session id verifies: a 404 would send the
    // client to initialize again, when the request itself is malformed (RFC 9110 §5.3, a singleton field).
    if ((req.headersDistinct['mcp-session-id']?.length ?? 0) > 1) {
      rpcError(res, 400, -32000, 'Bad Request: Mcp-Session-Id appears more than once; send the session id once', requestId);
      return null;
    }
    if (sessionId === undefined) {
      rpcError(res, 400, -32000, 'Bad Request: Mcp-Session-Id header is required; send initialize first', requestId);
      return null;
    }
    const session = sessions.verify(sessionId);
    if (session === null) {
      rpcError(res, 404, -32001, 'Session not found: start a new session with initialize (without Mcp-Session-Id)', requestId);
      return null;
    }
    res.setHeader('Mcp-Session-Id', sessionId);
    const version = requestProtocolVersion(req.get('mcp-protocol-version'), session.protocolVersion);
    if ('version' in version) return version.version;
    rpcError(res, 400, -32000, version.refusal, requestId);
    return null;
  }

  /**
   * The gateway's answer to a request it checks before the SDK, else null: params that do not fit the method
   * (invalidParams), an unknown tool, or a prompts/get the prompt's rules refuse (promptProblem), each a -32602
   * error; or a tools/call whose arguments the tool refuses (refusedArguments). MCP 2025-06-18 server/tools "Error
   * Handling" makes an unknown tool a protocol error (-32602), which the SDK would answer as an isError result.
   * Names are looked up here, in the gateway's own lists: the SDK's plain-object lookup finds `constructor` or `__proto__`.
   */
  function ownAnswer(request: JSONRPCRequest): RpcErrorResponse | JSONRPCResultResponse | null {
    const problem = invalidParams(request) ?? namedProblem(request);
    const answer = problem === null ? refusedArguments(request) : rpcErrorResponse(-32602, problem, request.id);
    // A tools/call answered here is still a failed tool call for the dashboards: of its tool when it names a known one.
    if (answer !== null && request.method === 'tools/call') gatewayMetrics.toolCalls.inc({ tool: toolLabel(request), outcome: 'error' });
    return answer;
  }

  /**
   * The isError result of a tools/call of a known tool whose arguments its input schema refuses, else null: a
   * result, not a protocol error, so the model reads what to correct (parseArguments words it).
   */
  function refusedArguments(request: JSONRPCRequest): JSONRPCResultResponse | null {
    const name = request.params?.['name'];
    const tool = request.method === 'tools/call' && typeof name === 'string' ? TOOLS_BY_NAME.get(name) : undefined;
    if (tool === undefined) return null;
    const args = parseArguments(tool, request.params?.['arguments']);
    // Keys in the order of the SDK's responses, as every other tool result is sent.
    return args.ok ? null : { result: toolError(args.message), jsonrpc: '2.0', id: request.id };
  }

  /** What is wrong with the tool or prompt a request with valid params names, else null. */
  function namedProblem(request: JSONRPCRequest): string | null {
    // invalidParams has checked that tools/call and prompts/get name a string.
    const name = request.params?.['name'];
    if (typeof name !== 'string') return null;
    if (request.method === 'prompts/get') return promptProblem(name, request.params?.['arguments']);
    if (request.method !== 'tools/call' || TOOLS_BY_NAME.has(name)) return null;
    return `Unknown tool: ${name}. Known tools: ${[...TOOLS_BY_NAME.keys()].join(', ')}`;
  }

  async function serveBatch(req: Request, res: Response, body: readonly unknown[]): Promise<void> {
    const version = admit(req, res, null);
    if (version === null) return;
    // Before looking at the elements: under a version without batches, any array is refused as a batch.
    if (!allowsBatches(version)) {
      return rpcError(res, 400, -32600, `Invalid Request: JSON-RPC batches are not supported in MCP ${version} (removed in 2025-06-18); send one message per POST`);
    }
    const batch = parseBatch(body);
    if ('refusal' in batch) return rpcError(res, 400, -32600, batch.refusal);
    // One snapshot for the whole batch, as for a single request: the server's and the memoized results' alike.
    const snapshot = snapshots.current();
    const server = buildMcpServer(snapshot, urls);
    const own = (request: JSONRPCRequest): Buffer | null => {
      const memoized = toolCalls?.(request, snapshot);
      if (memoized) return wholeResponse(memoized.head, request.id);
      const answer = ownAnswer(request);
      if (answer !== null) return Buffer.from(JSON.stringify(answer));
      const listed = lists.head(request, snapshot, version);
      return listed === null ? null : wholeResponse(listed, request.id);
    };
    try {
      const responses = await answerBatch(server, batch.elements, { own, observe: (request, response) => responseObserver(request, snapshot, version)(response) });
      if (responses.length > 0) return sendRpcBody(res, 200, jsonArray(responses));
      // MCP 2025-03-26 basic/transports: a batch of notifications or responses only is accepted with 202, no body.
      res.statusCode = 202;
      res.end();
    } catch (error) {
      logger.error({ err: error }, 'MCP batch failed');
      if (!res.headersSent) rpcError(res, 500, -32603, 'Internal error');
    } finally {
      void server.close();
    }
  }

  const app = express();
  app.disable('x-powered-by');
  // One endpoint path (MCP 2025-06-18 transports): express would also match /MCP and /mcp/.
  app.set('case sensitive routing', true);
  app.set('strict routing', true);
  const route = app.route(MCP_PATH);

  route.all((req: Request, res: Response, next: NextFunction) => {
    const origin = req.get('origin');
    if (origin === undefined) return next();
    if (!originAllowed(origin)) return rpcError(res, 403, -32000, `Forbidden: Origin ${origin} is not allowed to use this MCP server`);
    exposeToOrigin(res, origin);
    next();
  });

  route.options((req: Request, res: Response) => {
    res.set({ Allow: ALLOWED_METHODS, 'Access-Control-Allow-Methods': CORS_METHODS, 'Access-Control-Allow-Headers': requestedHeaders(req) ?? MCP_REQUEST_HEADERS, 'Access-Control-Max-Age': '86400' });
    res.status(204).end();
  });

  route.post(
    (req: Request, res: Response, next: NextFunction) => {
      if (!acceptsMcpResponses(req.get('accept'))) {
        return rpcError(res, 406, -32000, 'Not Acceptable: send "Accept: application/json, text/event-stream" (MCP streamable HTTP); responses are application/json');
      }
      // null: a request without a body has no media type to check (parseJsonBody refuses it as no JSON).
      if (req.is('application/json') === false) return rpcError(res, 415, -32000, 'Unsupported Media Type: Content-Type must be application/json');
      next();
    },
    parseJsonBody,
    async (req: Request, res: Response) => {
      const body: unknown = req.body;
      if (Array.isArray(body)) return serveBatch(req, res, body);
      const message = parseMessage(body);
      if (message === null) return rpcError(res, 400, -32600, `Invalid Request: ${invalidMessageReason(body)}`, refusedRequestId(body));
      const request = isJSONRPCRequest(message) ? message : null;
      const requestId = request?.id ?? null;
      // MCP basic/lifecycle: initialize MUST be a request. As a notification it would start no session, yet get 202.
      if (request === null && 'method' in message && message.method === 'initialize') {
        return rpcError(res, 400, -32600, 'Invalid Request: initialize must be a request, with an id');
      }
      const badInitialize = request?.method === 'initialize' ? invalidParams(request) : null;
      // A malformed initialize is not an initialize (isInitializeRequest below): say why, not "no session".
      if (badInitialize !== null) return rpcError(res, 400, -32602, badInitialize, requestId);

      // initialize is checked first, so a stale id header never blocks starting a new session.
      const initializing = request !== null && isInitializeRequest(request);
      const options: StreamableHTTPServerTransportOptions = { enableJsonResponse: true };
      if (initializing) {
        // The SDK mints the id before its server answers: with the version that answer will carry.
        const version = negotiatedProtocolVersion(request.params.protocolVersion);
        options.sessionIdGenerator = () => sessions.mint(version);
        options.onsessioninitialized = () => gatewayMetrics.sessionsInitialized.inc();
      }
      const version = initializing ? null : admit(req, res, requestId);
      if (!initializing && version === null) return;
      const snapshot = snapshots.current();
      if (request !== null && version !== null) {
        const answer = ownAnswer(request);
        if (answer !== null) return sendRpcJson(res, 200, answer);
        const listed = lists.head(request, snapshot, version);
        if (listed !== null) return sendMemoizedAnswer(req, res, listed, responseTail(request.id));
      }

      const server = buildMcpServer(snapshot, urls);
      const transport = new ToolCallObservingTransport(options, responseObserver(message, snapshot, version));
      res.on('close', () => {
        void transport.close();
        void server.close();
      });
      normalizeHeadersForSdk(req);
      try {
        await server.connect(transport);
        await transport.handleRequest(req, res, message);
      } catch (error) {
        logger.error({ err: error }, 'MCP request failed');
        if (!res.headersSent) rpcError(res, 500, -32603, 'Internal error', requestId);
      }
    },
  );

  route.all((_req: Request, res: Response) => {
    res.set('Allow', ALLOWED_METHODS);
    rpcError(res, 405, -32000, 'Method Not Allowed: this MCP endpoint accepts POST only (no SSE stream, no session DELETE)');
  });

  app.use((_req: Request, res: Response) => sendNotFound(res));

  // Body-parser failures arrive here; answer them as JSON-RPC errors, never express's HTML page.
  app.use((error: BodyError, req: Request, res: Response, next: NextFunction) => {
    if (res.headersSent) return next(error);
    answerBodyError(error, req, res, logger);
  });

  const sdkPath: RequestHandler = (req, res) => void app(req, res);
  const fastPath = toolCalls === null ? null : createToolCallFastPath({ sessions, originAllowed, snapshots, toolCalls, logger });
  const serve: RequestHandler = fastPath ? (req, res) => fastPath(req, res, sdkPath) : sdkPath;
  const limited = rateLimitedAnswer(config, originAllowed);
  return (req, res) => {
    const route = splitTarget(req.url).path === MCP_PATH ? MCP_PATH : UNMATCHED_ROUTE;
    markUncacheable(res);
    observeRequest(metrics, SERVICE_NAME, req, res, route, logger);
    inRequestSpan(res, () => (route === MCP_PATH && req.method === 'POST' && limited(req, res) ? undefined : serve(req, res)));
  };
}
