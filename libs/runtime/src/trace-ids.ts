import { randomFillSync } from 'node:crypto';

/** Hex digits per refill: 128 server spans' trace and span ids. */
const BLOCK_CHARS = 6144;
const HEX_DIGITS = Buffer.from('0123456789abcdef', 'latin1');
const INVALID_TRACE_ID = '0'.repeat(32);
const INVALID_SPAN_ID = '0'.repeat(16);
const ZERO = 0x30;

/**
 * Trace and span ids cut from a block of crypto-random hex digits, for the SDK's `idGenerator`. The
 * SDK's default writes Math.random() words into a buffer and hex-encodes it for every id, which was
 * a sixth of a span's cost on the fast path (bench suite `overhead`); a slice of a ready string is a
 * few nanoseconds.
 *
 * The digits are made in place, a random byte per digit whose low four bits pick it, and read out
 * as latin1: `toString('hex')` mallocs its output, and a malloc that size makes glibc consolidate
 * the small chunks node:http's parser allocates, slowing every request's mallocs after it. Ids are
 * sliced strings, so the all-zero check (W3C forbids such ids; one is drawn again) looks at the
 * first digit before comparing: an equality test on a sliced string goes through V8's runtime.
 */
export class PooledIdGenerator {
  readonly #block = Buffer.alloc(BLOCK_CHARS);
  #digits = '';
  #offset = 0;

  generateTraceId(): string {
    return this.#validId(32, INVALID_TRACE_ID);
  }

  generateSpanId(): string {
    return this.#validId(16, INVALID_SPAN_ID);
  }

  #validId(chars: number, invalid: string): string {
    let id = this.#take(chars);
    while (id.charCodeAt(0) === ZERO && id === invalid) id = this.#take(chars);
    return id;
  }

  #take(chars: number): string {
    if (this.#offset + chars > this.#digits.length) this.#refill();
    const id = this.#digits.slice(this.#offset, this.#offset + chars);
    this.#offset += chars;
    return id;
  }

  #refill(): void {
    const block = randomFillSync(this.#block);
    for (let i = 0; i < BLOCK_CHARS; i++) block[i] = HEX_DIGITS[block[i]! & 15]!;
    this.#digits = block.toString('latin1');
    this.#offset = 0;
  }
}
