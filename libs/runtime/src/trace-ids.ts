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
    return this.#validId(32, INVALID_TRACE_ID);
  }

  generateSpanId(): string {
    return this.#validId(16, INVALID_SPAN_ID);
  }

  #validId(chars: number, invalid: string): string {
    let id = this.#take(chars);
    while (id === invalid) id = this.#take(chars);
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
