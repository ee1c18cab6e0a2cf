import { z } from 'zod';
import { MAX_CALLBACK_AND_TOPIC_LENGTH, MAX_MCP_BATCH_MESSAGES, MAX_SECRET_BYTES } from '../limits.js';
import type { PublicUrls } from '../urls.js';
import { TOPICS, topicUrl } from '../urls.js';

/*
 * Wire formats of POST /mcp and POST /api/websub/hub, as zod schemas so the OpenAPI document converts
 * them like every other schema. The MCP SDK validates JSON-RPC itself; these describe, they do not parse.
 */

const JsonRpcId = z.union([z.string(), z.int()]).meta({ description: 'Request id, echoed in the response: a string or an integer (MCP refuses fractional ids).' });

export const JsonRpcRequest = z
  .object({
    jsonrpc: z.literal('2.0'),
    id: JsonRpcId.optional().meta({ description: 'Absent for a notification, which is answered 202 with no body.' }),
    method: z.string().min(1).meta({ description: 'initialize, tools/list, tools/call, ping or a notification such as notifications/initialized.' }),
    params: z.record(z.string(), z.unknown()).optional(),
  })
  .meta({
    id: 'JsonRpcRequest',
    description: 'One JSON-RPC 2.0 request, or a notification (no `id`).',
  });


const JsonRpcError = z.strictObject({
  code: z.int().meta({ description: 'JSON-RPC error code, e.g. -32600 invalid request, -32601 method not found, -32602 invalid params, -32000 transport error.' }),
  message: z.string(),
  data: z.unknown().optional(),
});

export const JsonRpcResponse = z
  .union([
    z.strictObject({ jsonrpc: z.literal('2.0'), id: JsonRpcId, result: z.record(z.string(), z.unknown()) }),
    z.strictObject({ jsonrpc: z.literal('2.0'), id: JsonRpcId.nullable(), error: JsonRpcError }),
  ])
  .meta({ id: 'JsonRpcResponse', description: 'A JSON-RPC 2.0 result or error. Transport errors (bad headers, unknown session) carry `id: null`.' });

/**
 * What a POST to /mcp carries (MCP 2025-06-18 basic/transports): one request, notification or response (a
 * client's answer to a server request, taken with 202), or a batch under the MCP versions that have batches.
 */
export const McpRequestBody = z
  .union([
    JsonRpcRequest,
    JsonRpcResponse,
    z
      .array(z.union([JsonRpcRequest, JsonRpcResponse]))
      .min(1)
      .max(MAX_MCP_BATCH_MESSAGES)
      .meta({
        description:
          'A JSON-RPC batch: MCP 2025-03-26 and earlier only (400 under 2025-06-18, which removed batching) of requests and notifications, or of responses, never both; never with initialize. An element that is no JSON-RPC message gets its own -32600 Invalid Request error in the response array, with its `id` when it is a request whose id can be read.',
      }),
  ])
  .meta({ id: 'McpRequestBody' });

/** What a 200 from /mcp carries: one response, or for a batch the responses to its requests, in order. */
export const McpResponseBody = z.union([JsonRpcResponse, z.array(JsonRpcResponse).min(1)]).meta({ id: 'McpResponseBody' });

/**
 * The WebSub subscription request. Its topic enum is built from BASE_URL, so it is made per call and
 * carries no global id (the OpenAPI document names it in its own registry).
 */
export function webSubHubRequest(urls: PublicUrls) {
  // Loose: the hub ignores unknown fields rather than rejecting them.
  return z
    .looseObject({
      'hub.callback': z
        .url({ protocol: /^https$/ })
        .max(MAX_CALLBACK_AND_TOPIC_LENGTH)
        .meta({
          pattern: '^[Hh][Tt][Tt][Pp][Ss]://',
          description:
            `HTTPS URL of the subscriber, at most ${MAX_CALLBACK_AND_TOPIC_LENGTH} characters also once percent-encoded (each byte of a non-ASCII character counts as three): no user information, no fragment, a port from 1 to 65535, a host that is a valid DNS name (labels of letters, digits and inner hyphens) or a public IP address, not a private, loopback or link-local address nor a \`localhost\` or \`*.localhost\` name (loopback, RFC 6761). Plain HTTP is rejected; the query string is preserved.`,
        }),
      'hub.mode': z.enum(['subscribe', 'unsubscribe']),
      'hub.topic': z.enum(TOPICS.map((topic) => topicUrl(urls, topic))).meta({ description: `One of the three topics; all track the same review data. Any spelling of the same URL names the topic too (RFC 3986 §6.2.2: scheme and host in any case, percent-encoded unreserved characters, a default port, dot segments), written as its scheme, \`://\` and a host: \`https:host\`, \`https:/host\`, \`https:///host\` and backslashes for slashes, which URL parsers repair, are refused. At most ${MAX_CALLBACK_AND_TOPIC_LENGTH} characters, also once percent-encoded (each byte of a non-ASCII character counts as three), like the callback.` }),
      // Digits rather than an integer: any positive number is taken and clamped, where an integer schema would
      // declare JavaScript's largest safe integer a maximum the hub does not hold requests to.
      'hub.lease_seconds': z
        .string()
        .regex(/^[0-9]*[1-9][0-9]*$/)
        .optional()
        .meta({ description: 'Requested lease in seconds, a positive integer in decimal digits of any size, clamped to the configured bounds (default 10 days); the verification request carries the granted value.', examples: ['86400'] }),
      'hub.secret': z
        .string()
        .min(1)
        .max(MAX_SECRET_BYTES)
        .optional()
        .meta({ description: `Fewer than ${MAX_SECRET_BYTES + 1} bytes of UTF-8 (not characters). Every notification then carries \`X-Hub-Signature: sha256=<hex HMAC of the body>\`.` }),
    })
    .meta({ description: 'Form fields of a (un)subscription request. Unknown fields are ignored.' });
}
