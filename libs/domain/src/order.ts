import type { Review } from './schemas/review.js';

/** Newest first: date descending, then id descending (ULIDs sort by creation time), so ties are stable. */
export function compareNewestFirst(a: Pick<Review, 'date' | 'id'>, b: Pick<Review, 'date' | 'id'>): number {
  if (a.date !== b.date) return a.date < b.date ? 1 : -1;
  if (a.id !== b.id) return a.id < b.id ? 1 : -1;
  return 0;
}

/**
 * Rounds half away from zero at `decimals` places. The 12-significant-digit step first removes binary
 * noise (4.45 is stored as 4.4499999…), so a mean that is exactly x.x5 in decimal rounds up.
 */
export function round(value: number, decimals: number): number {
  const factor = 10 ** decimals;
  const scaled = Number((Math.abs(value) * factor).toPrecision(12));
  const rounded = (Math.sign(value) * Math.round(scaled)) / factor;
  return rounded === 0 ? 0 : rounded;
}
