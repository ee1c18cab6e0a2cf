import { randomFillSync } from 'node:crypto';
import type { TraceIdWords } from './sampling.js';

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
export class PooledIdGenerator implements TraceIdWords {
  readonly #block = Buffer.alloc(BLOCK_CHARS);
  #digits = '';
  #offset = 0;
  /** The last trace id made, until the next refill overwrites its digits in `#block`. */
  #lastTraceId: string | undefined;
  /** Where its digits are in `#block`. */
  #lastTraceIdAt = 0;

  generateTraceId(): string {
    const id = this.#validId(32, INVALID_TRACE_ID);
    this.#lastTraceId = id;
    this.#lastTraceIdAt = this.#offset - 32;
    return id;
  }

  /**
   * The ratio sampler asks for each root span's trace id right after it was made here. Reading the
   * 32 digits of a sliced string cost ~1.5 % of a traced server's CPU at 10 % sampling (ADR 0009,
   * ninth-session addendum); the same digits read from the block's bytes cost a sixth of that. The
   * same string object compares by pointer.
   */
  xorOfWords(traceId: string): number | undefined {
    if (traceId !== this.#lastTraceId) return undefined;
    const block = this.#block;
    let xor = 0;
    for (let word = this.#lastTraceIdAt, end = word + 32; word < end; word += 8) {
      let value = 0;
      for (let i = word; i < word + 8; i++) {
        const c = block[i]!;
        // '0'-'9' are 0x30-0x39 and 'a'-'f' 0x61-0x66: the low four bits, plus 9 for a letter. The
        // block holds only these, and the runtime's general hexValue made this walk ~4 times slower.
        value = (value << 4) | ((c & 15) + 9 * (c >> 6));
      }
      xor ^= value;
    }
    return xor >>> 0;
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
    this.#lastTraceId = undefined;
    this.#offset = 0;
  }
}
