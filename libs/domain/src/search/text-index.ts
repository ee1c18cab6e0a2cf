/**
 * Case-insensitive substring search over the review texts in newest-first order. All lower-cased
 * texts are joined into one haystack, so a query over a date range is one `indexOf` sweep over
 * one contiguous string instead of one call per review.
 */
export interface TextIndex {
  /** Calls `visit` once per position in [from, to) whose text contains `lowerQuery`, in ascending position order. */
  forEachMatch(lowerQuery: string, from: number, to: number, visit: (position: number) => void): void;
  contains(position: number, lowerQuery: string): boolean;
  /** Whether one sweep over [from, to) is cheaper than testing `candidates` texts one by one. */
  prefersScan(candidates: number, rangeWidth: number): boolean;
}

/** A sweep over one review's worth of characters costs about this many per-review `includes` calls. */
const SCAN_ADVANTAGE = 4;

export function createTextIndex(texts: readonly string[]): TextIndex {
  const lowered = texts.map((text) => text.toLowerCase());
  // Separator: any character works because matches are checked against review boundaries below.
  const haystack = lowered.join('\u0000');
  /** starts[p]: offset of text p in the haystack; starts[count] is one past the end. */
  const starts = new Int32Array(texts.length + 1);
  for (let p = 0, offset = 0; p < texts.length; p++) {
    starts[p] = offset;
    offset += (lowered[p] as string).length + 1;
    starts[p + 1] = offset;
  }
  const endOf = (p: number) => (starts[p + 1] as number) - 1;

  /** Position whose text span contains haystack `offset` (separator counts to the text before it). */
  function positionAt(offset: number): number {
    let low = 0;
    let high = texts.length - 1;
    while (low < high) {
      const mid = (low + high + 1) >>> 1;
      if ((starts[mid] as number) <= offset) low = mid;
      else high = mid - 1;
    }
    return low;
  }

  return {
    forEachMatch(lowerQuery, from, to, visit) {
      const stop = starts[to] as number;
      let offset = starts[from] as number;
      while (offset < stop) {
        const at = haystack.indexOf(lowerQuery, offset);
        if (at < 0 || at >= stop) return;
        const position = positionAt(at);
        if (at + lowerQuery.length <= endOf(position)) {
          visit(position);
          offset = starts[position + 1] as number;
        } else {
          offset = at + 1; // the hit spans a separator: not a real match, look further inside the same text
        }
      }
    },
    contains: (position, lowerQuery) => (lowered[position] as string).includes(lowerQuery),
    prefersScan: (candidates, rangeWidth) => candidates * SCAN_ADVANTAGE > rangeWidth,
  };
}
