import { Counter, registeredOnce, type Metrics, type Registry } from '@reviews/runtime';
import { TOOLS_BY_NAME } from './tools.js';

export const SERVICE_NAME = 'mcp-gateway';

export interface GatewayMetrics {
  readonly toolCalls: Counter<'tool' | 'outcome'>;
  readonly sessionsInitialized: Counter;
}

/** Reuses counters already in the registry, so a gateway rebuilt in the same process keeps counting. */
function counter<L extends string>(registry: Registry, name: string, help: string, labelNames: readonly L[]): Counter<L> {
  return registeredOnce(registry, name, () => new Counter({ name, help, labelNames, registers: [registry] }));
}

/**
 * Every tool's series exist from the start at 0 (`unknown`: a name that is no tool), so rate() and
 * increase() see a pod's first call of each: a series first seen at 1 shows no increase.
 */
export function createGatewayMetrics(metrics: Metrics): GatewayMetrics {
  const toolCalls = counter(metrics.registry, 'mcp_tool_calls_total', 'MCP tools/call requests by tool and outcome (ok, or error for any isError result or JSON-RPC error).', ['tool', 'outcome']);
  for (const tool of [...TOOLS_BY_NAME.keys(), 'unknown']) for (const outcome of ['ok', 'error']) toolCalls.inc({ tool, outcome }, 0);
  const sessionsInitialized = counter(metrics.registry, 'mcp_sessions_initialized_total', 'MCP sessions started (successful initialize requests).', []);
  return { toolCalls, sessionsInitialized };
}
