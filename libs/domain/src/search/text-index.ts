/**
 * Case-insensitive substring search over the review texts (positions = newest-first order).
 *
 * A trigram index narrows a query to the texts containing every trigram of it; `includes` then
 * confirms each candidate. Trigrams are taken over a folded 64-symbol alphabet (letters and digits
 * exact, other characters bucketed), so the whole table is one flat array: folding can only add
 * candidates, never lose a match, because every candidate is confirmed against the real text.
 */
export interface TextIndex {
  /** Ascending positions of every text containing `lowerQuery`. Remembered for the most recent queries. */
  matches(lowerQuery: string): Int32Array;
  /** Does the text at `position` contain `lowerQuery`? For testing a few positions without `matches`. */
  contains(position: number, lowerQuery: string): boolean;
}

/**
 * Popular queries repeat; a snapshot never changes, so their match lists stay valid. At most
 * 64 x 4 bytes x review count (25 MiB at 100,000 reviews).
 */
const REMEMBERED_QUERIES = 64;

const SYMBOL_BITS = 6;
const TRIGRAM_MASK = (1 << (3 * SYMBOL_BITS)) - 1;
const TRIGRAM_COUNT = TRIGRAM_MASK + 1;

/** UTF-16 code unit -> symbol 0..63: a-z 1..26, 0-9 27..36, space 37, everything else bucketed into 38..63. */
const FOLD = Uint8Array.from({ length: 0x10000 }, (_, unit) => {
  if (unit >= 0x61 && unit <= 0x7a) return unit - 0x61 + 1;
  if (unit >= 0x30 && unit <= 0x39) return unit - 0x30 + 27;
  if (unit === 0x20) return 37;
  return 38 + (unit % 26);
});

/** Characters that fold to a symbol of their own (no bucket is shared). */
const EXACT_SYMBOLS = /^[a-z0-9 ]*$/;

/** Calls `visit` with each trigram code of `text`, in order, duplicates included. */
function forEachTrigram(text: string, visit: (code: number) => void): void {
  let code = 0;
  for (let i = 0; i < text.length; i++) {
    code = ((code << SYMBOL_BITS) | (FOLD[text.charCodeAt(i)] as number)) & TRIGRAM_MASK;
    if (i >= 2) visit(code);
  }
}

export function createTextIndex(texts: readonly string[]): TextIndex {
  const lowered = texts.map((text) => text.toLowerCase());

  // Two passes (count, then fill) build every posting list inside one Int32Array without resizing.
  const offsets = new Int32Array(TRIGRAM_COUNT + 1);
  const lastSeen = new Int32Array(TRIGRAM_COUNT).fill(-1);
  lowered.forEach((text, position) =>
    forEachTrigram(text, (code) => {
      if (lastSeen[code] === position) return;
      lastSeen[code] = position;
      offsets[code + 1] = (offsets[code + 1] as number) + 1;
    }),
  );
  for (let code = 0; code < TRIGRAM_COUNT; code++) offsets[code + 1] = (offsets[code + 1] as number) + (offsets[code] as number);
  const postings = new Int32Array(offsets[TRIGRAM_COUNT] as number);
  const cursor = offsets.slice(0, TRIGRAM_COUNT);
  lastSeen.fill(-1);
  lowered.forEach((text, position) =>
    forEachTrigram(text, (code) => {
      if (lastSeen[code] === position) return;
      lastSeen[code] = position;
      postings[cursor[code] as number] = position;
      cursor[code] = (cursor[code] as number) + 1;
    }),
  );

  const postingList = (code: number) => postings.subarray(offsets[code], offsets[code + 1]);
  const contains = (position: number, lowerQuery: string) => (lowered[position] as string).includes(lowerQuery);

  function computeMatches(lowerQuery: string): Int32Array {
    if (lowerQuery.length < 3) return keep(lowered.length, (position) => contains(position, lowerQuery));
    const codes = new Set<number>();
    forEachTrigram(lowerQuery, (code) => codes.add(code));
    const candidates = intersect([...codes].map(postingList).sort((a, b) => a.length - b.length));
    // One trigram of characters with their own symbols: every candidate is a match.
    if (lowerQuery.length === 3 && EXACT_SYMBOLS.test(lowerQuery)) return candidates;
    return keep(candidates.length, (i) => contains(candidates[i] as number, lowerQuery), candidates);
  }

  const remembered = new Map<string, Int32Array>();
  return {
    matches(lowerQuery) {
      let positions = remembered.get(lowerQuery);
      if (positions) remembered.delete(lowerQuery);
      else positions = computeMatches(lowerQuery);
      remembered.set(lowerQuery, positions); // re-inserted: Map order is recency order
      if (remembered.size > REMEMBERED_QUERIES) remembered.delete(remembered.keys().next().value as string);
      return positions;
    },
    contains,
  };
}

/** The elements i of `from` (default: i itself) for which `keepIndex(i)` holds, for i in [0, count). */
function keep(count: number, keepIndex: (i: number) => boolean, from?: Int32Array): Int32Array {
  const kept = new Int32Array(count);
  let size = 0;
  for (let i = 0; i < count; i++) if (keepIndex(i)) kept[size++] = from ? (from[i] as number) : i;
  return kept.slice(0, size);
}

/** Intersection of ascending lists, walking the shortest and advancing one cursor per other list. */
function intersect(listsShortestFirst: readonly Int32Array[]): Int32Array {
  const [shortest, ...others] = listsShortestFirst;
  if (!shortest) return new Int32Array(0);
  if (others.length === 0) return shortest;
  const result = new Int32Array(shortest.length);
  const cursors = new Int32Array(others.length);
  let size = 0;
  outer: for (let s = 0; s < shortest.length; s++) {
    const position = shortest[s] as number;
    for (let k = 0; k < others.length; k++) {
      const list = others[k] as Int32Array;
      let i = cursors[k] as number;
      while (i < list.length && (list[i] as number) < position) i++;
      cursors[k] = i;
      if (i === list.length) break outer;
      if (list[i] !== position) continue outer;
    }
    result[size++] = position;
  }
  return result.subarray(0, size);
}
