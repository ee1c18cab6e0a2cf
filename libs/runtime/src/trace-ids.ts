import { randomFillSync } from 'node:crypto';
import type { TraceIdWords } from './sampling.js';

/** Hex digits per refill: 128 server spans' trace and span ids. */
const BLOCK_CHARS = 6144;
/**
 * The two hex digits of each byte value, as the 16-bit word whose bytes in memory are those digits
 * (first digit first, whatever the machine's byte order): one store writes two digits.
 */
const HEX_PAIRS = (() => {
  const pairs = new Uint16Array(256);
  const bytes = new Uint8Array(pairs.buffer);
  const digits = '0123456789abcdef';
  for (let value = 0; value < 256; value++) {
    bytes[2 * value] = digits.charCodeAt(value >> 4);
    bytes[2 * value + 1] = digits.charCodeAt(value & 15);
  }
  return pairs;
})();
const INVALID_TRACE_ID = '0'.repeat(32);
const INVALID_SPAN_ID = '0'.repeat(16);
const ZERO = 0x30;

/**
 * Trace and span ids cut from a block of crypto-random hex digits, for the SDK's `idGenerator`. The
 * SDK's default writes Math.random() words into a buffer and hex-encodes it for every id, which was
 * a sixth of a span's cost on the fast path (bench suite `overhead`); a slice of a ready string is a
 * few nanoseconds.
 *
 * The digits are made in place, each random byte spelling two of them with one 16-bit store from a
 * table (half the random bytes and stores of a digit per byte: ~380 fewer instructions per sampled
 * request under callgrind), and read out as latin1: `toString('hex')` mallocs its output, and a
 * malloc that size makes glibc consolidate the small chunks node:http's parser allocates, slowing
 * every request's mallocs after it. Ids are sliced strings, so the all-zero check (W3C forbids such
 * ids; one is drawn again) looks at the first digit before comparing: an equality test on a sliced
 * string goes through V8's runtime.
 */
export class PooledIdGenerator implements TraceIdWords {
  readonly #block = Buffer.alloc(BLOCK_CHARS);
  /** The block's first half takes the random bytes; each is spelled into two digits from the end down. */
  readonly #random = this.#block.subarray(0, BLOCK_CHARS / 2);
  readonly #pairs = new Uint16Array(this.#block.buffer, this.#block.byteOffset, BLOCK_CHARS / 2);
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
    const at = this.#lastTraceIdAt;
    return (this.#wordAt(at) ^ this.#wordAt(at + 8) ^ this.#wordAt(at + 16) ^ this.#wordAt(at + 24)) >>> 0;
  }

  /** A uniformly random 32-bit word, from the same crypto-random pool: a root request's sampling decision. */
  randomWord(): number {
    return this.#wordAt(this.#reserve(8));
  }

  /**
   * A random trace id whose four 32-bit words XOR to `xor`: three random words, and the fourth that
   * makes up the rest. A root request is decided from a random word before it has ids (xor below the
   * sampler's bound: sampled); its ids then carry that decision, so the SDK's ratio sampler and every
   * service sampling at the same ratio keep or drop the trace alike.
   */
  generateTraceIdWithXor(xor: number): string {
    const at = this.#reserve(24);
    const last = (xor ^ this.#wordAt(at) ^ this.#wordAt(at + 8) ^ this.#wordAt(at + 16)) >>> 0;
    const id = this.#digits.slice(at, at + 24) + last.toString(16).padStart(8, '0');
    return id === INVALID_TRACE_ID ? this.generateTraceIdWithXor(xor) : id;
  }

  generateSpanId(): string {
    return this.#validId(16, INVALID_SPAN_ID);
  }

  /** The 32-bit word the block's eight hex digits at `at` spell. */
  #wordAt(at: number): number {
    const block = this.#block;
    let value = 0;
    for (let i = at; i < at + 8; i++) {
      const c = block[i]!;
      // '0'-'9' are 0x30-0x39 and 'a'-'f' 0x61-0x66: the low four bits, plus 9 for a letter. The
      // block holds only these, and the runtime's general hexValue made this walk ~4 times slower.
      value = (value << 4) | ((c & 15) + 9 * (c >> 6));
    }
    return value >>> 0;
  }

  #validId(chars: number, invalid: string): string {
    let id = this.#take(chars);
    while (id.charCodeAt(0) === ZERO && id === invalid) id = this.#take(chars);
    return id;
  }

  #take(chars: number): string {
    const at = this.#reserve(chars);
    return this.#digits.slice(at, at + chars);
  }

  /** Where the next `chars` unused digits start, refilling the block first if it has fewer. */
  #reserve(chars: number): number {
    if (this.#offset + chars > this.#digits.length) this.#refill();
    const at = this.#offset;
    this.#offset += chars;
    return at;
  }

  #refill(): void {
    const random = randomFillSync(this.#random);
    const pairs = this.#pairs;
    // Downwards: pair i covers bytes 2i and 2i+1, so it only overwrites random bytes already spelled.
    for (let i = BLOCK_CHARS / 2 - 1; i >= 0; i--) pairs[i] = HEX_PAIRS[random[i]!]!;
    this.#digits = this.#block.toString('latin1');
    this.#lastTraceId = undefined;
    this.#offset = 0;
  }
}
