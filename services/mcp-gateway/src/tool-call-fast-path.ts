import type { IncomingMessage, ServerResponse } from 'node:http';
import { isJSONRPCRequest, JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js';
import type { SnapshotFollower } from '@reviews/dataset-store';
import { PATHS } from '@reviews/domain';
import { BoundedLru, pathOf, type Logger, type RequestHandler } from '@reviews/runtime';
import { acceptsMcpResponses, answerBodyError, exposeToOrigin, parseJsonBody, requestProtocolVersion, type BodyError } from './http-rules.js';
import { sendMemoizedAnswer } from './gzip-answers.js';
import { responseTail, type MemoizedToolCalls } from './memoized-tool-calls.js';
import type { Session, SessionIds } from './session-id.js';

const MAX_VERIFIED_SESSIONS = 10_000;

export interface ToolCallFastPathDeps {
  readonly sessions: SessionIds;
  readonly originAllowed: (origin: string) => boolean;
  readonly snapshots: Pick<SnapshotFollower, 'current'>;
  /** The gateway's memoized tool results, which its batches share. */
  readonly toolCalls: MemoizedToolCalls;
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
export function createToolCallFastPath({ sessions, originAllowed, snapshots, toolCalls, logger }: ToolCallFastPathDeps): ToolCallFastPath {
  // Ids that verified recently: the HMAC per request was a tenth of the fast path's CPU. Only ids that
  // passed SessionIds.verify enter, and ids never expire (ADR 0003), so a hit is the same answer.
  // Bounded by count (an id is at most 256 characters).
  const verifiedSessions = new BoundedLru<Session>(MAX_VERIFIED_SESSIONS, MAX_VERIFIED_SESSIONS, () => 1);

  function verified(sessionId: string): Session | null {
    const known = verifiedSessions.get(sessionId);
    if (known !== undefined) return known;
    const session = sessions.verify(sessionId);
    if (session !== null) verifiedSessions.set(sessionId, session);
    return session;
  }

  /** The verified session id when the headers are ones both the gateway and the SDK transport accept, else null. */
  function sessionOf(req: IncomingMessage): string | null {
    if (req.method !== 'POST' || pathOf(req.url) !== PATHS.mcp) return null;
    const { origin, accept, 'content-type': contentType, 'mcp-protocol-version': version, 'mcp-session-id': sessionId } = req.headers;
    if (origin !== undefined && !originAllowed(origin)) return null;
    if (!acceptsMcpResponses(accept)) return null;
    // The exact header SDK clients send, which the gateway's media-type check and the SDK's both accept.
    if (contentType !== 'application/json') return null;
    const session = typeof sessionId === 'string' ? verified(sessionId) : null;
    return session !== null && 'version' in requestProtocolVersion(version, session.protocolVersion) ? (sessionId as string) : null;
  }

  /** True when answered; false leaves the response untouched for the SDK path. */
  function answer(req: IncomingMessage & { body?: unknown }, res: ServerResponse, sessionId: string): boolean {
    const body = req.body;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return false;
    const parsed = JSONRPCMessageSchema.safeParse(body);
    if (!parsed.success || !isJSONRPCRequest(parsed.data)) return false;
    const message = parsed.data;
    const result = toolCalls(message, snapshots.current());
    if (!result) return false;

    const origin = req.headers.origin;
    if (origin !== undefined) exposeToOrigin(res, origin);
    res.setHeader('Mcp-Session-Id', sessionId);
    sendMemoizedAnswer(req, res, result.head, responseTail(message.id));
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
      if (!answer(req, res, sessionId)) fallback(req, res);
    });
  };
}
