import type { JSONRPCMessage, JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import type { Snapshot } from '@reviews/domain';
import type { RpcErrorResponse } from './http-rules.js';
import { responseHead } from './memoized-tool-calls.js';

/** The lists, answered whole: without params a request for one carries nothing its answer depends on. */
const LISTS = new Set(['tools/list', 'prompts/list', 'resources/list', 'resources/templates/list']);
const READ_RESOURCE = 'resources/read';
/** Stands for "no dataset loaded" as a WeakMap key. */
const NO_SNAPSHOT = {};

/**
 * The SDK's answers to the list requests and to resources/read of each resource, recorded from the first and
 * sent again byte for byte, per dataset version and protocol version. tools/list alone cost ~3 ms of CPU per
 * request (the SDK converts every tool's schemas to JSON Schema each time), which a batch of a hundred
 * multiplied; reading reviews.json as a resource cost 192 ms at 20,000 reviews (the complexity audit), as the
 * whole document is escaped into the answer's text. Only results are kept, so an unknown URI adds nothing:
 * at most one entry per resource.
 */
export interface MemoizedLists {
  /**
   * The response to `request` as the SDK answered it before, up to its id (responseTail ends it), the same
   * Buffer on every call; else null.
   */
  head(request: JSONRPCRequest, snapshot: Snapshot | null, version: string): Buffer | null;
  /** Keeps the SDK's response to `request` when it is a list's result. */
  record(request: JSONRPCRequest, response: JSONRPCMessage | RpcErrorResponse, snapshot: Snapshot | null, version: string): void;
}

/**
 * What the answer to `request` is kept under, when nothing else in it changes the answer; else null. A list's
 * answer differs by protocol version (the fields each version has); a resource's does not, and its `_meta`
 * changes nothing, so neither multiplies its entries (the third review: a client could keep five copies of
 * reviews.json, one per version, or step around the memo with an empty `_meta`).
 */
function memoKey(request: JSONRPCRequest, version: string): string | null {
  const params = request.params ?? {};
  const names = Object.keys(params);
  if (LISTS.has(request.method)) return names.length === 0 ? `${version} ${request.method}` : null;
  const uri = params['uri'];
  const onlyUri = names.every((name) => name === 'uri' || name === '_meta');
  return request.method === READ_RESOURCE && onlyUri && typeof uri === 'string' ? `${READ_RESOURCE} ${uri}` : null;
}

export function createMemoizedLists(): MemoizedLists {
  // At most one entry per list or resource and protocol version for each dataset version; an old version's go with its snapshot.
  const answers = new WeakMap<object, Map<string, Buffer>>();
  return {
    head(request, snapshot, version) {
      const key = memoKey(request, version);
      return (key === null ? undefined : answers.get(snapshot ?? NO_SNAPSHOT)?.get(key)) ?? null;
    },
    record(request, response, snapshot, version) {
      const key = memoKey(request, version);
      if (key === null || !('result' in response) || response.id !== request.id) return;
      let memo = answers.get(snapshot ?? NO_SNAPSHOT);
      if (!memo) answers.set(snapshot ?? NO_SNAPSHOT, (memo = new Map()));
      memo.set(key, responseHead(response.result));
    },
  };
}
