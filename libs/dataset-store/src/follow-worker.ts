/**
 * Worker thread entry: builds snapshot content off the serving thread and posts it back with its
 * bodies transferred. One request per worker: the caller ends the worker after the answer.
 */
import { parentPort } from 'node:worker_threads';
import { buildContent, buildError, detachBodies, type BuildRequest, type ContentOutcome } from './follow-build.js';

const port = parentPort;
if (!port) throw new Error('follow-worker runs as a worker thread');
port.on('message', (request: BuildRequest) => {
  let outcome: ContentOutcome;
  try {
    outcome = buildContent(request);
  } catch (error) {
    outcome = buildError(error);
  }
  port.postMessage(outcome, outcome.ok ? detachBodies(outcome.content) : []);
});
