/**
 * Worker thread entry: builds snapshot content off the serving thread, one request after another,
 * and sends each back in one message (follow-transfer.ts), every byte of it transferred. The worker
 * lives across builds (follow-offthread.ts), so its loaded modules, its JIT-compiled code and the
 * compressed bodies of the previous build are reused, the reviews a new version repeats are neither
 * validated (validate.ts) nor sent again (follow-transfer.ts). A swap's build sends the brotli variants of its
 * new bodies in a second message (ADR 0007).
 */
import { once } from 'node:events';
import { parentPort } from 'node:worker_threads';
import { buildContent, buildError, RETIRE_AFTER_BYTES, type ContentOutcome, type ValidationMemo } from './follow-build.js';
import { CompressionMemo } from './follow-compression.js';
import { packOutcome, type LateBrotliMessage, type SentItems, type WorkerRequest } from './follow-transfer.js';

const port = parentPort;
if (!port) throw new Error('follow-worker runs as a worker thread');
const memo = new CompressionMemo();
/** The last dataset validated, so a new version's repeated reviews skip the schema (validate.ts). */
const validation: ValidationMemo = { before: null, limitBytes: RETIRE_AFTER_BYTES };
/** The reviews and analyses of the last content sent, for the next build to leave out the slices it repeats. */
let sent: SentItems | null = null;
for (;;) {
  const [request] = (await once(port, 'message')) as [WorkerRequest];
  let outcome: ContentOutcome;
  try {
    outcome = buildContent(request, memo.compressor(request.deferBrotli), validation);
  } catch (error) {
    outcome = buildError(error);
  }
  const packed = packOutcome(outcome, sent?.version === request.heldVersion ? sent : null);
  const { message, transfer } = packed;
  if (packed.sent) sent = packed.sent;
  port.postMessage(message, transfer);
  if (request.deferBrotli) {
    // The serving thread swaps the content in meanwhile.
    const late: LateBrotliMessage = { brotli: outcome.ok ? memo.compressDeferred() : new Map() };
    port.postMessage(late, [...late.brotli.values()].map((body) => body.buffer as ArrayBuffer));
  }
  // A refused dataset compressed nothing: the previous build's bodies stay the ones to reuse.
  if (outcome.ok) memo.endBuild();
}
