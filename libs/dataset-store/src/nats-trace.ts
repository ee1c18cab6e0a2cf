import { randomBytes } from 'node:crypto';
import { activeTraceparent } from '@reviews/runtime';

/**
 * The W3C traceparent to stamp on a publish: the active span's when tracing is on, otherwise a
 * fresh sampled one, so a publish -> rebuild -> notification chain always shares one trace id.
 */
export function publishTraceparent(): string {
  return activeTraceparent() ?? `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-01`;
}
