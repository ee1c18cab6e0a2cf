import { CallToolResultSchema, type JSONRPCRequest, type RequestId } from '@modelcontextprotocol/sdk/types.js';
import type { Snapshot } from '@reviews/domain';
import { BoundedLru } from '@reviews/runtime';
import { invalidParams } from './http-rules.js';
import type { GatewayMetrics } from './metrics.js';
import { inToolSpan, runTool } from './server.js';
import { parseArguments, TOOLS_BY_NAME, type ToolDefinition } from './tools.js';

const MAX_MEMO_ENTRIES = 1000;
/** Per dataset version, for the results and again for the calls answered (which hold the same results, and their params). */
const MAX_MEMO_BYTES = 16 * 1024 * 1024;
/** The only params answered here: the SDK gives `_meta` (progress tokens, related tasks) and `task` a meaning. */
const PLAIN_PARAMS = new Set(['name', 'arguments']);

/** A CallToolResult exactly as the SDK path serializes it, as the response up to the request id (responseTail ends it). */
export interface SerializedResult {
  /** `{"result":<result>,"jsonrpc":"2.0","id":` in UTF-8: encoding tens of KiB per request was the fast path's largest cost. */
  readonly head: Buffer;
  readonly isError: boolean;
}

interface AnsweredCall {
  readonly tool: ToolDefinition;
  readonly result: SerializedResult;
  /** What the entry keeps alive: its params and its result, which the results' memo may already have evicted. */
  readonly bytes: number;
}

/**
 * The serialized result of a `tools/call` request on `snapshot`, counted in `mcp_tool_calls_total` and traced as
 * the SDK path does; null for a request the SDK path must answer (anything but plain valid arguments of a known
 * tool on a loaded snapshot, a result the SDK would refuse, a tool that throws).
 */
export type MemoizedToolCalls = (request: JSONRPCRequest, snapshot: Snapshot | null) => SerializedResult | null;

/** A result response up to its id, in the order of JSON.stringify({ result, jsonrpc, id }) as the SDK's Protocol builds it. */
export function responseHead(result: unknown): Buffer {
  return Buffer.from(`{"result":${JSON.stringify(result)},"jsonrpc":"2.0","id":`);
}

/** The rest of a response whose SerializedResult was sent: the request's id as the SDK writes it, and the closing brace. */
export function responseTail(id: RequestId): Buffer {
  return Buffer.from(`${JSON.stringify(id)}}`);
}

/** A memoized response head completed for the request `id`, in one buffer (a batch's element). */
export function wholeResponse(head: Buffer, id: RequestId): Buffer {
  return Buffer.concat([head, responseTail(id)]);
}

/**
 * Tool results answered byte for byte as the SDK path answers them, memoized per dataset version. One instance
 * serves the tools/call fast path and the tool calls of batches (docs/adr/0008-mcp-tool-call-fast-path.md).
 */
export function createMemoizedToolCalls(metrics: GatewayMetrics): MemoizedToolCalls {
  // Serialized results per dataset version: a swap starts a fresh memo, the old one goes with its snapshot.
  const memos = new WeakMap<Snapshot, BoundedLru<SerializedResult>>();

  /** Tool result on a memo miss, validated and transformed as the SDK does; null where the SDK would answer an error. */
  function serialize(tool: ToolDefinition, snapshot: Snapshot, args: unknown): SerializedResult | null {
    const result = runTool(tool, snapshot, args);
    // McpServer validates structuredContent against the output schema; Server then parses the whole result.
    if (!result.isError && !tool.output.safeParse(result.structuredContent).success) return null;
    const sent = CallToolResultSchema.safeParse(result);
    return sent.success ? { head: responseHead(sent.data), isError: sent.data.isError === true } : null;
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

  /**
   * Calls answered before, by their params as sent: the same params are valid and answered alike, so a repeat
   * skips validating and parsing them again (1.4 of the 2.1 µs a memoized call took). Bounded by what its entries
   * hold, results included: many distinct params with large results must not keep more than the results' memo may.
   */
  const answered = new WeakMap<Snapshot, BoundedLru<AnsweredCall>>();

  function answer(request: JSONRPCRequest, snapshot: Snapshot): { readonly tool: ToolDefinition; readonly result: SerializedResult | null } | null {
    if (!Object.keys(request.params ?? {}).every((key) => PLAIN_PARAMS.has(key)) || invalidParams(request) !== null) return null;
    const name = request.params?.['name'];
    const tool = typeof name === 'string' ? TOOLS_BY_NAME.get(name) : undefined;
    if (!tool) return null;
    // Invalid arguments get the SDK path's isError result (the gateway's ownAnswer).
    const args = parseArguments(tool, request.params?.['arguments']);
    if (!args.ok) return null;
    return { tool, result: inToolSpan(tool, snapshot, () => memoized(tool, snapshot, args.value)) };
  }

  return (request, snapshot) => {
    if (request.method !== 'tools/call' || !snapshot) return null;
    let calls = answered.get(snapshot);
    if (!calls) answered.set(snapshot, (calls = new BoundedLru<AnsweredCall>(MAX_MEMO_ENTRIES, MAX_MEMO_BYTES, (call) => call.bytes)));
    const key = JSON.stringify(request.params);
    let call = calls.get(key) ?? null;
    if (call) {
      const { tool, result } = call;
      inToolSpan(tool, snapshot, () => result);
    } else {
      try {
        const fresh = answer(request, snapshot);
        if (fresh?.result) calls.set(key, (call = { tool: fresh.tool, result: fresh.result, bytes: key.length + fresh.result.head.length }));
      } catch {
        // A tool that throws: McpServer turns that into an isError result, so the SDK path answers it.
        return null;
      }
    }
    if (!call) return null;
    metrics.toolCalls.inc({ tool: call.tool.name, outcome: call.result.isError ? 'error' : 'ok' });
    return call.result;
  };
}
