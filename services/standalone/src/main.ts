import { runPod } from '@reviews/dataset-store';
import { createStandaloneApp } from './app.js';

// Everything in one process, one port, no NATS: datasets come from DATASET_FILE, reloaded on change.
// An invalid file is logged and refused; the process stays up (503 on /readyz) until a valid one appears.
await runPod('standalone', (context) => createStandaloneApp(context), { datasetSource: 'file' });
