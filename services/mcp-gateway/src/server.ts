import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { ListResourcesRequestSchema, ListResourceTemplatesRequestSchema, ReadResourceRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { JSON_CONTENT_TYPE, type PublicUrls, type Snapshot, type SnapshotRepresentations } from '@reviews/domain';
import { withSyncSpan } from '@reviews/runtime';
import { PROMPTS } from './prompts.js';
import { TOOLS, type ToolDefinition, type ToolOutcome } from './tools.js';

export const SERVER_NAME = 'reviews';
export const SERVER_VERSION = '1.0.0';
export const NOT_LOADED_MESSAGE = 'The reviews dataset is not loaded yet (the service is starting or waiting for its first published dataset). Retry in a few seconds.';
/** JSON-RPC code MCP assigns to "resource not found". */
export const RESOURCE_NOT_FOUND = -32002;

/**
 * Without one, the SDK builds a new Ajv instance (~0.4 ms) for every server, and the gateway builds a
 * server per request. The validator only checks elicitation answers, which the gateway never requests,
 * so one instance serves every server.
 */
const jsonSchemaValidator = new AjvJsonSchemaValidator();

/**
 * What a resource handler throws for an unreadable URI. The SDK sends a thrown error's `code`, `message` and
 * `data` as the JSON-RPC error; McpError would put "MCP error -32002: " in that message, and the SDK client
 * prefixes it again.
 */
class ResourceNotFound extends Error {
  readonly code = RESOURCE_NOT_FOUND;

  constructor(
    message: string,
    readonly data: { readonly uri: string },
  ) {
    super(message);
  }
}

const TOOL_ANNOTATIONS = { readOnlyHint: true, openWorldHint: false, idempotentHint: true, destructiveHint: false } as const;

const RESOURCES: readonly { key: keyof PublicUrls & keyof SnapshotRepresentations; name: string; title: string; description: string }[] = [
  { key: 'reviews', name: 'reviews', title: 'Reviews dataset', description: 'Business profile, aggregate rating and every verified review, newest first (GET /reviews.json).' },
  { key: 'insights', name: 'insights', title: 'Insights dataset', description: 'Aspect sentiment, staff and service entities, topics, monthly trend, FAQ and summary (GET /insights.json).' },
  { key: 'feedJson', name: 'feed', title: 'JSON Feed of the newest reviews', description: 'JSON Feed 1.1 holding the 50 newest reviews (GET /api/feed.json).' },
];

function instructions(snapshot: Snapshot | null): string {
  const subject = snapshot ? `${snapshot.reviewsDocument.business.name}, a funeral home` : 'one funeral home';
  return [
    `Read-only access to the verified customer reviews of ${subject} and to an analysis of them.`,
    'Start with get_business (profile, services, staff, rating) or get_insights_overview (sentiment, trend, summary).',
    'Use search_reviews to read reviews (filters combine with AND; dates are YYYY-MM-DD; newest first; limit up to 100) and get_review for one review by id.',
    'get_aspect_sentiment, get_technician, get_service, get_faq and get_rating_trend answer focused questions; quote review text verbatim and cite review ids.',
    'The same data is available as resources (reviews.json, insights.json, feed.json). Tools never change anything.',
  ].join(' ');
}

/** A tool error as McpServer builds one: an isError result whose text says what went wrong, for the model to act on. */
export function toolError(message: string): CallToolResult {
  return { content: [{ type: 'text', text: message }], isError: true };
}

function toolResult(outcome: ToolOutcome): CallToolResult {
  if (!outcome.ok) return toolError(outcome.message);
  return { content: [{ type: 'text', text: JSON.stringify(outcome.value) }], structuredContent: outcome.value };
}

/** The CallToolResult of a tool for arguments its input schema accepted, on one snapshot (or "not loaded" before the first). */
export function runTool(tool: ToolDefinition, snapshot: Snapshot | null, args: unknown): CallToolResult {
  return toolResult(snapshot ? tool.run(snapshot, args as never) : { ok: false, message: NOT_LOADED_MESSAGE });
}

/**
 * Runs `call` in the `mcp tool <name>` span, marked when its result is an error. The SDK path and the
 * tools/call fast path (which may answer from its memo) both go through it, so their traces match.
 */
export function inToolSpan<R extends { readonly isError?: boolean | undefined } | null>(tool: ToolDefinition, snapshot: Snapshot | null, call: () => R): R {
  return withSyncSpan(`mcp tool ${tool.name}`, { attributes: { 'mcp.tool.name': tool.name, 'dataset.version': snapshot?.version ?? 'none' } }, (span) => {
    const result = call();
    if (result?.isError) span.setAttribute('mcp.tool.error', true);
    return result;
  });
}

/**
 * One MCP server bound to one snapshot, built per HTTP request: the SDK forbids reusing a server across
 * transports, and binding the snapshot once means a request never mixes two dataset versions.
 */
export function buildMcpServer(snapshot: Snapshot | null, urls: PublicUrls): McpServer {
  const server = new McpServer({ name: SERVER_NAME, title: 'Funeral home reviews', version: SERVER_VERSION }, { instructions: instructions(snapshot), jsonSchemaValidator });

  for (const tool of TOOLS) {
    server.registerTool(
      tool.name,
      { title: tool.title, description: tool.description, inputSchema: tool.input, outputSchema: tool.output, annotations: { title: tool.title, ...TOOL_ANNOTATIONS } },
      (args: unknown) => inToolSpan(tool, snapshot, () => runTool(tool, snapshot, args)),
    );
  }

  for (const prompt of PROMPTS) {
    server.registerPrompt(prompt.name, { title: prompt.title, description: prompt.description, argsSchema: prompt.shape }, (args) => prompt.render(snapshot, args as never));
  }

  // Resources are served by low-level handlers: McpServer answers an unknown URI with -32602, MCP says -32002.
  server.server.registerCapabilities({ resources: {} });
  server.server.setRequestHandler(ListResourcesRequestSchema, () => ({
    resources: RESOURCES.map(({ key, name, title, description }) => ({ uri: urls[key], name, title, description, mimeType: JSON_CONTENT_TYPE })),
  }));
  // The documents have fixed URIs, so there are no templates; a client that lists them (as many do on
  // seeing the resources capability) gets an empty list, not "method not found".
  server.server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({ resourceTemplates: [] }));
  server.server.setRequestHandler(ReadResourceRequestSchema, ({ params }) => {
    const resource = RESOURCES.find(({ key }) => urls[key] === params.uri);
    if (!resource) throw new ResourceNotFound(`Resource not found: ${params.uri}. Known resources: ${RESOURCES.map(({ key }) => urls[key]).join(', ')}`, { uri: params.uri });
    if (!snapshot) throw new ResourceNotFound(`${NOT_LOADED_MESSAGE} (${params.uri})`, { uri: params.uri });
    const text = snapshot.representations[resource.key].identity.body.toString('utf8');
    return { contents: [{ uri: params.uri, mimeType: JSON_CONTENT_TYPE, text }] };
  });

  // Nothing can change within one request-scoped server, so no list_changed notifications are promised.
  server.server.registerCapabilities({ tools: { listChanged: false }, prompts: { listChanged: false }, resources: { listChanged: false } });
  return server;
}
