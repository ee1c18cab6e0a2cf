import { randomFillSync } from 'node:crypto';

/** Random bytes hex-encoded per refill: one encode serves 128 server spans' trace and span ids. */
const BLOCK_BYTES = 3072;
const INVALID_TRACE_ID = '0'.repeat(32);
const INVALID_SPAN_ID = '0'.repeat(16);

/**
 * Trace and span ids cut from a block of crypto-random hex, for the SDK's `idGenerator`. The SDK's
 * default writes Math.random() words into a buffer and hex-encodes it for every id, which was a
 * sixth of a span's cost on the fast path (bench suite `overhead`); a slice of a ready hex string is
 * a few nanoseconds. W3C forbids all-zero ids, so one is drawn again.
 */
export class PooledIdGenerator {
  #hex = '';
  #offset = 0;

  generateTraceId(): string {
    let id = this.#take(32);
    while (id === INVALID_TRACE_ID) id = this.#take(32);
    return id;
  }

  generateSpanId(): string {
    let id = this.#take(16);
    while (id === INVALID_SPAN_ID) id = this.#take(16);
    return id;
  }

  #take(chars: number): string {
    if (this.#offset + chars > this.#hex.length) {
      this.#hex = randomFillSync(Buffer.allocUnsafe(BLOCK_BYTES)).toString('hex');
      this.#offset = 0;
    }
    const id = this.#hex.slice(this.#offset, this.#offset + chars);
    this.#offset += chars;
    return id;
  }
}
