/**
 * Worker thread entry: builds snapshot content off the serving thread and sends it back in
 * acknowledged slices (follow-transfer.ts), bodies and index tables transferred. One build per
 * worker: the caller ends the worker after the last message.
 */
import { once } from 'node:events';
import { parentPort } from 'node:worker_threads';
import { buildContent, buildError, type BuildRequest, type ContentOutcome } from './follow-build.js';
import { buildMessages } from './follow-transfer.js';

const port = parentPort;
if (!port) throw new Error('follow-worker runs as a worker thread');
const [request] = (await once(port, 'message')) as [BuildRequest];
let outcome: ContentOutcome;
try {
  outcome = buildContent(request);
} catch (error) {
  outcome = buildError(error);
}
for (const { message, transfer } of buildMessages(outcome)) {
  port.postMessage(message, transfer);
  if (message.kind !== 'done') await once(port, 'message');
}
