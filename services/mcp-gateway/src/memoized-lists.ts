import type { JSONRPCMessage, JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import type { Snapshot } from '@reviews/domain';
import type { RpcErrorResponse } from './http-rules.js';
import { responseHead, responseTail } from './memoized-tool-calls.js';

/** The lists, answered whole: without params a request for one carries nothing its answer depends on. */
const LISTS = new Set(['tools/list', 'prompts/list', 'resources/list', 'resources/templates/list']);
/** Stands for "no dataset loaded" as a WeakMap key. */
const NO_SNAPSHOT = {};

/**
 * The SDK's answers to the list requests, recorded from the first and sent again byte for byte, per dataset
 * version and protocol version. tools/list alone cost ~3 ms of CPU per request (the SDK converts every tool's
 * schemas to JSON Schema each time), which a batch of a hundred multiplied.
 */
export interface MemoizedLists {
  /** The whole response to `request` as the SDK answered it before, else null. */
  answer(request: JSONRPCRequest, snapshot: Snapshot | null, version: string): Buffer | null;
  /** Keeps the SDK's response to `request` when it is a list's result. */
  record(request: JSONRPCRequest, response: JSONRPCMessage | RpcErrorResponse, snapshot: Snapshot | null, version: string): void;
}

function memoized(request: JSONRPCRequest): boolean {
  return LISTS.has(request.method) && (request.params === undefined || Object.keys(request.params).length === 0);
}

export function createMemoizedLists(): MemoizedLists {
  // At most one entry per list and protocol version for each dataset version; an old version's go with its snapshot.
  const answers = new WeakMap<object, Map<string, Buffer>>();
  return {
    answer(request, snapshot, version) {
      if (!memoized(request)) return null;
      const head = answers.get(snapshot ?? NO_SNAPSHOT)?.get(`${version} ${request.method}`);
      return head === undefined ? null : Buffer.concat([head, responseTail(request.id)]);
    },
    record(request, response, snapshot, version) {
      if (!memoized(request) || !('result' in response) || response.id !== request.id) return;
      let memo = answers.get(snapshot ?? NO_SNAPSHOT);
      if (!memo) answers.set(snapshot ?? NO_SNAPSHOT, (memo = new Map()));
      memo.set(`${version} ${request.method}`, responseHead(response.result));
    },
  };
}
