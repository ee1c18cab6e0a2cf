import type { IncomingMessage, ServerResponse } from 'node:http';
import { CallToolResultSchema, isJSONRPCRequest, JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js';
import type { Snapshot } from '@reviews/domain';
import type { SnapshotFollower } from '@reviews/dataset-store';
import { BoundedLru, pathOf, type Logger, type RequestHandler } from '@reviews/runtime';
import { acceptsMcpResponses, answerBodyError, exposeToOrigin, invalidParams, parseJsonBody, requestProtocolVersion, type BodyError } from './http-rules.js';
import type { GatewayMetrics } from './metrics.js';
import { inToolSpan, runTool } from './server.js';
import type { SessionIds } from './session-id.js';
import { parseArguments, TOOLS_BY_NAME, type ToolDefinition } from './tools.js';

const MAX_MEMO_ENTRIES = 1000;
const MAX_MEMO_BYTES = 16 * 1024 * 1024;
const MAX_VERIFIED_SESSIONS = 10_000;
/** The only params answered here: the SDK gives `_meta` (progress tokens, related tasks) and `task` a meaning. */
const PLAIN_PARAMS = new Set(['name', 'arguments']);

/** A CallToolResult exactly as the SDK path serializes it, as the response body up to the request id. */
interface SerializedResult {
  /** `{"result":<result>,"jsonrpc":"2.0","id":` in UTF-8: encoding tens of KiB per request was the fast path's largest cost. */
  readonly head: Buffer;
  readonly isError: boolean;
}

export interface ToolCallFastPathDeps {
  readonly path: string;
  readonly sessions: SessionIds;
  readonly originAllowed: (origin: string) => boolean;
  readonly snapshots: Pick<SnapshotFollower, 'current'>;
  readonly metrics: GatewayMetrics;
  readonly logger: Logger;
}

/** Answers the request, or calls `fallback` (the SDK path) for anything it does not take. */
export type ToolCallFastPath = (req: IncomingMessage, res: ServerResponse, fallback: RequestHandler) => void;

/**
 * The hottest MCP request, a `tools/call` in a valid session, answered on node:http without the SDK's
 * per-request McpServer, transport and express stack, byte for byte as the SDK path would answer it
 * (docs/adr/0008-mcp-tool-call-fast-path.md). It only *accepts*: every rule it checks is the gateway's
 * or the SDK's own, and a request failing any of them goes to the SDK path, which gives the error.
 */
export function createToolCallFastPath({ path, sessions, originAllowed, snapshots, metrics, logger }: ToolCallFastPathDeps): ToolCallFastPath {
  // Serialized results per dataset version: a swap starts a fresh memo, the old one goes with its snapshot.
  const memos = new WeakMap<Snapshot, BoundedLru<SerializedResult>>();
  // Ids that verified recently: the HMAC per request was a tenth of the fast path's CPU. Only ids that
  // passed SessionIds.verify enter, and ids never expire (ADR 0003), so a hit is the same answer.
  // Bounded by count (an id is at most 256 characters).
  const verifiedSessions = new BoundedLru<true>(MAX_VERIFIED_SESSIONS, MAX_VERIFIED_SESSIONS, () => 1);

  function verified(sessionId: string): boolean {
    if (verifiedSessions.get(sessionId)) return true;
    if (!sessions.verify(sessionId)) return false;
    verifiedSessions.set(sessionId, true);
    return true;
  }

  /** The verified session id when the headers are ones both the gateway and the SDK transport accept, else null. */
  function sessionOf(req: IncomingMessage): string | null {
    if (req.method !== 'POST' || pathOf(req.url) !== path) return null;
    const { origin, accept, 'content-type': contentType, 'mcp-protocol-version': version, 'mcp-session-id': sessionId } = req.headers;
    if (origin !== undefined && !originAllowed(origin)) return null;
    if (!acceptsMcpResponses(accept)) return null;
    // The exact header SDK clients send, which the gateway's media-type check and the SDK's both accept.
    if (contentType !== 'application/json') return null;
    if (requestProtocolVersion(version) === null) return null;
    return typeof sessionId === 'string' && verified(sessionId) ? sessionId : null;
  }

  /** Tool result on a memo miss, validated and transformed as the SDK does; null where the SDK would answer an error. */
  function serialize(tool: ToolDefinition, snapshot: Snapshot, args: unknown): SerializedResult | null {
    const result = runTool(tool, snapshot, args);
    // McpServer validates structuredContent against the output schema; Server then parses the whole result.
    if (!result.isError && !tool.output.safeParse(result.structuredContent).success) return null;
    const sent = CallToolResultSchema.safeParse(result);
    // The order of JSON.stringify({ result, jsonrpc, id }) as the SDK's Protocol builds its response.
    return sent.success ? { head: Buffer.from(`{"result":${JSON.stringify(sent.data)},"jsonrpc":"2.0","id":`), isError: sent.data.isError === true } : null;
  }

  function memoized(tool: ToolDefinition, snapshot: Snapshot, args: unknown): SerializedResult | null {
    let memo = memos.get(snapshot);
    if (!memo) memos.set(snapshot, (memo = new BoundedLru<SerializedResult>(MAX_MEMO_ENTRIES, MAX_MEMO_BYTES, (entry) => entry.head.length)));
    // Parsed arguments list their fields in schema order, so equal arguments give equal keys.
    const key = `${tool.name}\n${JSON.stringify(args)}`;
    const hit = memo.get(key);
    if (hit) return hit;
    const entry = serialize(tool, snapshot, args);
    if (entry) memo.set(key, entry);
    return entry;
  }

  /** True when answered; false leaves the response untouched for the SDK path. */
  function answer(req: IncomingMessage & { body?: unknown }, res: ServerResponse, sessionId: string): boolean {
    const body = req.body;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return false;
    const rawParams = (body as { params?: unknown }).params;
    if (typeof rawParams !== 'object' || rawParams === null || !Object.keys(rawParams).every((key) => PLAIN_PARAMS.has(key))) return false;
    const parsed = JSONRPCMessageSchema.safeParse(body);
    if (!parsed.success) return false;
    const message = parsed.data;
    if (!isJSONRPCRequest(message) || message.method !== 'tools/call' || invalidParams(message) !== null) return false;
    const name = message.params?.['name'];
    const tool = typeof name === 'string' ? TOOLS_BY_NAME.get(name) : undefined;
    const snapshot = snapshots.current();
    if (!tool || !snapshot) return false;
    // Invalid arguments get the SDK path's isError result (the gateway's ownAnswer).
    const args = parseArguments(tool, message.params?.['arguments']);
    if (!args.ok) return false;
    const result = inToolSpan(tool, snapshot, () => memoized(tool, snapshot, args.value));
    if (!result) return false;

    metrics.toolCalls.inc({ tool: tool.name, outcome: result.isError ? 'error' : 'ok' });
    const origin = req.headers.origin;
    if (origin !== undefined) exposeToOrigin(res, origin);
    res.setHeader('Mcp-Session-Id', sessionId);
    const tail = Buffer.from(`${JSON.stringify(message.id)}}`);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': result.head.length + tail.length });
    // One socket write for headers, memoized head and id, without copying the head.
    res.cork();
    res.write(result.head);
    res.end(tail);
    res.uncork();
    return true;
  }

  return (req, res, fallback) => {
    const sessionId = sessionOf(req);
    if (sessionId === null) return fallback(req, res);
    // The SDK path's own parser; once it has read the body, express's copy sees a finished request and keeps req.body.
    parseJsonBody(req, res, (error?: unknown) => {
      if (error !== undefined) {
        if (req.headers.origin !== undefined) exposeToOrigin(res, req.headers.origin);
        return answerBodyError(error as BodyError, req, res, logger);
      }
      let answered: boolean;
      try {
        answered = answer(req, res, sessionId);
      } catch (error) {
        // A tool that throws: McpServer turns that into an isError result, so the SDK path answers it.
        if (res.headersSent) throw error;
        answered = false;
      }
      if (!answered) fallback(req, res);
    });
  };
}
