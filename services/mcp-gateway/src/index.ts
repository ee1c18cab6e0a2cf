export { createMcpGateway, MCP_PATH, type McpGatewayDeps } from './gateway.js';
export { resolveSessionSecret, SESSION_SECRET_FILE } from './session-secret.js';
export { createSessionIds, type SessionIds } from './session-id.js';
export { createOriginPolicy } from './origins.js';
export { TOOLS, type ToolDefinition } from './tools.js';
