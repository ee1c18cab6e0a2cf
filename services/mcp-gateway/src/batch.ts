import { setImmediate as eventLoopTurn } from 'node:timers/promises';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { isJSONRPCErrorResponse, isJSONRPCRequest, isJSONRPCResultResponse, type JSONRPCMessage, type JSONRPCRequest, type JSONRPCResponse, type RequestId } from '@modelcontextprotocol/sdk/types.js';
import { MAX_MCP_BATCH_MESSAGES } from '@reviews/domain';
import { invalidMessageReason, parseMessage, refusedRequestId, rpcErrorResponse, type RpcErrorResponse } from './http-rules.js';

// JSON-RPC batches, which MCP 2025-03-26 (basic/transports) says a server MUST accept and 2025-06-18 removed.
// They are not handed to the SDK's HTTP transport, which would answer a batch holding one request with a bare
// object where JSON-RPC 2.0 §6 wants an array, and would hold the HTTP response open forever for a request
// that a notifications/cancelled later in the same batch cancels.

/**
 * What the responses of one batch may add up to: room for several of the largest results (every review, ~470 KB
 * on the sample dataset), where 13 KB of get_reviews_since calls with distinct dates drew 47 MB and a second of
 * CPU. Once spent, the remaining requests are refused without running: a batch's response is at most this plus
 * the one response that spent it.
 */
export const MAX_BATCH_RESPONSE_BYTES = 4 * 1024 * 1024;
/** The server-defined JSON-RPC error (-32000 to -32099) of a request refused because its batch's budget is spent. */
export const BATCH_RESPONSE_TOO_LARGE = -32010;

export type BatchResponse = JSONRPCResponse | RpcErrorResponse;

/** An element of a batch: a JSON-RPC message, or the Invalid Request response JSON-RPC 2.0 §6 gives an element that is none. */
export type BatchElement = { readonly message: JSONRPCMessage } | { readonly invalid: RpcErrorResponse };

/**
 * The elements of a batch, or why the whole batch is refused (400 -32600, like a single body that is no message).
 * An element that is no message is answered on its own and the others still are (JSON-RPC 2.0 §6); only what
 * is wrong with the batch as a whole refuses it.
 */
export function parseBatch(body: readonly unknown[]): { readonly elements: BatchElement[] } | { readonly refusal: string } {
  // JSON-RPC 2.0 §6: an empty array is no batch and gets a single Invalid Request response, not an array; a 400,
  // as every other body that is no message.
  if (body.length === 0) return { refusal: 'Invalid Request: the batch is empty' };
  if (body.length > MAX_MCP_BATCH_MESSAGES) return { refusal: `Invalid Request: a batch holds at most ${MAX_MCP_BATCH_MESSAGES} messages` };
  const elements = body.map((element, index): BatchElement => {
    const message = parseMessage(element);
    if (message !== null) return { message };
    return { invalid: rpcErrorResponse(-32600, `Invalid Request: the batch element at index ${index}: ${invalidMessageReason(element)}`, refusedRequestId(element)) };
  });
  const messages = elements.flatMap((element) => ('message' in element ? [element.message] : []));
  // MCP 2025-03-26 basic/lifecycle: "The initialization request MUST NOT be part of a JSON-RPC batch".
  if (messages.some((message) => 'method' in message && message.method === 'initialize')) {
    return { refusal: 'Invalid Request: initialize must not be part of a batch; send it alone' };
  }
  // MCP 2025-03-26 basic/transports: a POST body MUST be one message, a batch of requests and notifications, or
  // a batch of responses; a batch mixing them is none of these.
  const responses = messages.filter((message) => !('method' in message)).length;
  if (responses > 0 && responses < messages.length) return { refusal: 'Invalid Request: a batch holds requests and notifications, or responses, never both' };
  return { elements };
}

/** How a batch's requests are answered besides by the server. */
export interface BatchAnswerers {
  /** The gateway's own answer to a request, as JSON text (a refusal, a memoized tool result); null leaves it to the server. */
  readonly own: (request: JSONRPCRequest) => Buffer | null;
  /** Sees each answer the gateway did not give through `own`: the server's, and refusals for the spent budget. */
  readonly observe: (request: JSONRPCRequest, response: BatchResponse) => void;
}

/**
 * The JSON text of the responses to the requests and invalid elements of a batch, in their order, from `server`
 * (connected here; the caller closes it), at most MAX_BATCH_RESPONSE_BYTES of them and one more.
 * Messages go to the server one at a time, each request answered before the next message, so a cancellation
 * later in the batch finds nothing left to cancel and every request gets its response. The event loop turns
 * between elements: a batch of expensive calls must not hold up other requests (liveness probes among them).
 */
export async function answerBatch(server: McpServer, elements: readonly BatchElement[], { own, observe }: BatchAnswerers): Promise<Buffer[]> {
  const [client, serverSide] = InMemoryTransport.createLinkedPair();
  const waiting = new Map<RequestId, (response: JSONRPCResponse) => void>();
  client.onmessage = (message) => {
    if ((isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) && message.id !== undefined) waiting.get(message.id)?.(message);
  };
  await server.connect(serverSide);

  /** The server's answer to a request, as JSON text. */
  async function ask(request: JSONRPCRequest): Promise<Buffer> {
    const response = await new Promise<JSONRPCResponse>((resolve, reject) => {
      waiting.set(request.id, resolve);
      client.send(request).catch(reject);
    });
    waiting.delete(request.id);
    observe(request, response);
    return Buffer.from(JSON.stringify(response));
  }

  const responses: Buffer[] = [];
  let responseBytes = 0;
  for (const [index, element] of elements.entries()) {
    if (index > 0) await eventLoopTurn();
    if ('invalid' in element) {
      responses.push(Buffer.from(JSON.stringify(element.invalid)));
      continue;
    }
    const { message } = element;
    if (!isJSONRPCRequest(message)) {
      await client.send(message);
      continue;
    }
    if (responseBytes >= MAX_BATCH_RESPONSE_BYTES) {
      const refusal = rpcErrorResponse(
        BATCH_RESPONSE_TOO_LARGE,
        `Batch response too large: the responses to earlier requests of this batch reached its limit of ${MAX_BATCH_RESPONSE_BYTES} bytes, so this request was not run; send fewer calls per batch`,
        message.id,
      );
      observe(message, refusal);
      responses.push(Buffer.from(JSON.stringify(refusal)));
      continue;
    }
    const response = own(message) ?? (await ask(message));
    responseBytes += response.length;
    responses.push(response);
  }
  return responses;
}

const [OPEN, COMMA, CLOSE] = ['[', ',', ']'].map((text) => Buffer.from(text)) as [Buffer, Buffer, Buffer];

/** A JSON array of the JSON texts given, as JSON.stringify would write the array of their values. */
export function jsonArray(texts: readonly Buffer[]): Buffer {
  return Buffer.concat([OPEN, ...texts.flatMap((text, index) => (index === 0 ? [text] : [COMMA, text])), CLOSE]);
}
