import { Counter, registeredOnce, type Metrics, type Registry } from '@reviews/runtime';

export const SERVICE_NAME = 'mcp-gateway';

export interface GatewayMetrics {
  readonly toolCalls: Counter<'tool' | 'outcome'>;
  readonly sessionsInitialized: Counter;
}

/** Reuses counters already in the registry, so a gateway rebuilt in the same process keeps counting. */
function counter<L extends string>(registry: Registry, name: string, help: string, labelNames: readonly L[]): Counter<L> {
  return registeredOnce(registry, name, () => new Counter({ name, help, labelNames, registers: [registry] }));
}

export function createGatewayMetrics(metrics: Metrics): GatewayMetrics {
  return {
    toolCalls: counter(metrics.registry, 'mcp_tool_calls_total', 'MCP tools/call requests by tool and outcome (ok, or error for any isError result or JSON-RPC error).', ['tool', 'outcome']),
    sessionsInitialized: counter(metrics.registry, 'mcp_sessions_initialized_total', 'MCP sessions started (successful initialize requests).', []),
  };
}
