import type { Random } from './random.js';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/**
 * A ULID for `timeMs`: 10 characters of timestamp then 16 characters (80 bits) drawn from `random`.
 * Lexicographic order of the ids therefore follows time, which keeps "date, then id" ordering coherent.
 */
export function ulidAt(timeMs: number, random: Random): string {
  if (!Number.isInteger(timeMs) || timeMs < 0 || timeMs >= 2 ** 48) throw new RangeError(`ULID time out of range: ${timeMs}`);
  let time = '';
  let rest = timeMs;
  for (let i = 0; i < 10; i++) {
    time = CROCKFORD.charAt(rest % 32) + time;
    rest = Math.floor(rest / 32);
  }
  let entropy = '';
  for (let i = 0; i < 16; i++) entropy += CROCKFORD.charAt(random.int(0, 31));
  return time + entropy;
}
