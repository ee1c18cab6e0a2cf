import { runPod } from '@reviews/dataset-store';
import { READ_AND_POST_METHODS } from '@reviews/runtime';
import { createMcpGateway } from './gateway.js';
import { SERVICE_NAME } from './metrics.js';

// mcp-gateway as it runs in a pod: configuration from the environment only, datasets from NATS
// (or DATASET_FILE when NATS_URL is unset). A bad MCP_SESSION_SECRET or MCP_ALLOWED_ORIGINS ends
// the process naming the variable.
await runPod(SERVICE_NAME, (context) => ({ handler: createMcpGateway(context), allow: READ_AND_POST_METHODS }));
