import { runPod } from '@reviews/dataset-store';
import { createReadApi, SERVICE } from './app.js';

// read-api as it runs in a pod: configuration from the environment only.
await runPod(SERVICE, ({ logger, metrics, snapshots }) => ({ handler: createReadApi({ logger, metrics, snapshots }) }));
