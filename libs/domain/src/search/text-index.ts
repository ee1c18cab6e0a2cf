import { foldForSearch } from './fold.js';

/**
 * Case-insensitive substring search over the review texts (positions = newest-first order).
 *
 * A trigram index narrows a query to the texts containing every trigram of it; `includes` then
 * confirms each candidate. Trigrams are taken over a folded 64-symbol alphabet (letters and digits
 * exact, other characters bucketed), so the whole table is one flat array: folding can only add
 * candidates, never lose a match, because every candidate is confirmed against the real text.
 * Confirming is the bulk of a common query's time (" the" is in ~88% of the texts), so it looks
 * for the query's rarest character first rather than its first one (see `testFor`).
 */
export interface TextIndex {
  /** Ascending positions of every text containing `lowerQuery` (folded by foldForSearch, as the texts are). Remembered for the most recent queries. */
  matches(lowerQuery: string): Int32Array;
  /**
   * Ascending positions of every text that may contain `lowerQuery` (3 characters or more; null
   * for shorter queries), from the trigram tables alone; `confirmed` when each one does contain it,
   * otherwise `contains` must decide. Lets a search confirm only the texts its other filters keep.
   */
  candidates(lowerQuery: string): { readonly positions: Int32Array; readonly confirmed: boolean } | null;
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

/**
 * A trigram found in more than this share of the texts is stored as a bitset (count / 8 bytes)
 * instead of a position list (4 bytes per text): common trigrams, the bulk of all postings, then
 * cost a fraction of the memory, and intersecting them is a word-wise AND.
 */
const BITSET_ABOVE_SHARE = 1 / 32;

/** Texts whose characters are counted to rank them by rarity: plenty for letter frequencies, cheap to count. */
const RARITY_SAMPLE_TEXTS = 2000;

/** How often each UTF-16 code unit occurs in (a sample of) the texts. */
function unitCounts(lowered: readonly string[]): Uint32Array {
  const counts = new Uint32Array(0x10000);
  for (const text of lowered.slice(0, RARITY_SAMPLE_TEXTS)) {
    for (let i = 0; i < text.length; i++) counts[text.charCodeAt(i)] = (counts[text.charCodeAt(i)] as number) + 1;
  }
  return counts;
}

/**
 * A substring test for one query that finds the query's rarest character first. `includes` stops
 * at every occurrence of the query's first character, and most queries start with a space or a
 * common letter: finding the rest from the rarest character on with `indexOf`, then checking the
 * characters before it, measured about twice as fast on review texts for such queries.
 */
function testFor(lowerQuery: string, counts: Uint32Array): (text: string) => boolean {
  let rarest = 0;
  for (let i = 1; i < lowerQuery.length; i++) if ((counts[lowerQuery.charCodeAt(i)] as number) < (counts[lowerQuery.charCodeAt(rarest)] as number)) rarest = i;
  if (rarest === 0) return (text) => text.includes(lowerQuery);
  const before = lowerQuery.slice(0, rarest);
  const rest = lowerQuery.slice(rarest);
  return (text) => {
    let misses = 0;
    for (let at = text.indexOf(rest, rarest); at !== -1; at = text.indexOf(rest, at + 1)) {
      if (text.startsWith(before, at - rarest)) return true;
      // A text repeating the query's tail (5 MB of "q" for "eqq…q") made this loop cost text length x
      // query length, a second per search; `includes` (Boyer-Moore) does not. Starts up to here are ruled out.
      if (++misses === MISSES_BEFORE_INCLUDES) return text.includes(lowerQuery, at - rarest + 1);
    }
    return false;
  };
}

/** Near misses of the rarest-first test in one text before it hands the rest of the text to `includes`. */
const MISSES_BEFORE_INCLUDES = 16;

/**
 * The trigram tables: typed arrays only, so they can be built on a worker thread and transferred
 * to the thread that searches.
 */
export interface TextIndexData {
  /** Per trigram code: its bitset's slot, or -1 when it is stored as a position list. */
  readonly bitsetSlot: Int32Array;
  /** Per trigram code: where its list starts in `lists` (TRIGRAM_COUNT + 1 entries). */
  readonly listStart: Int32Array;
  readonly lists: Int32Array;
  readonly bitsets: Uint32Array;
}

export function buildTextIndexData(texts: readonly string[]): TextIndexData {
  const lowered = texts.map(foldForSearch);
  const count = lowered.length;
  const wordsPerBitset = Math.ceil(count / 32);

  /** Calls `visit` once per distinct trigram code of each text, with the text's position. */
  const lastSeen = new Int32Array(TRIGRAM_COUNT);
  const forEachDistinctTrigram = (visit: (code: number, position: number) => void) => {
    lastSeen.fill(-1);
    lowered.forEach((text, position) =>
      forEachTrigram(text, (code) => {
        if (lastSeen[code] === position) return;
        lastSeen[code] = position;
        visit(code, position);
      }),
    );
  };

  // Pass 1 counts texts per trigram and picks each trigram's storage; pass 2 fills lists and bitsets
  // in place, so nothing is resized.
  const textsWith = new Int32Array(TRIGRAM_COUNT);
  forEachDistinctTrigram((code) => (textsWith[code] = (textsWith[code] as number) + 1));
  const bitsetSlot = new Int32Array(TRIGRAM_COUNT).fill(-1);
  const listStart = new Int32Array(TRIGRAM_COUNT + 1);
  let slots = 0;
  for (let code = 0; code < TRIGRAM_COUNT; code++) {
    const texts = textsWith[code] as number;
    const useBitset = texts > count * BITSET_ABOVE_SHARE;
    if (useBitset) bitsetSlot[code] = slots++;
    listStart[code + 1] = (listStart[code] as number) + (useBitset ? 0 : texts);
  }
  const lists = new Int32Array(listStart[TRIGRAM_COUNT] as number);
  const bitsets = new Uint32Array(slots * wordsPerBitset);
  const listEnd = listStart.slice(0, TRIGRAM_COUNT);
  forEachDistinctTrigram((code, position) => {
    const slot = bitsetSlot[code] as number;
    if (slot >= 0) {
      const word = slot * wordsPerBitset + (position >>> 5);
      bitsets[word] = (bitsets[word] as number) | (1 << (position & 31));
    } else {
      lists[listEnd[code] as number] = position;
      listEnd[code] = (listEnd[code] as number) + 1;
    }
  });
  return { bitsetSlot, listStart, lists, bitsets };
}

export function createTextIndex(texts: readonly string[], data: TextIndexData = buildTextIndexData(texts)): TextIndex {
  const { bitsetSlot, listStart, lists, bitsets } = data;
  const count = texts.length;
  const wordsPerBitset = Math.ceil(count / 32);
  // Folded up front (tens of ms at 100,000 texts): folding on first use made the first searches
  // after a swap pay for every text they confirm.
  const lowered = texts.map(foldForSearch);

  const counts = unitCounts(lowered);

  // A search tests many texts against one query: its test is built once.
  let testedQuery = '';
  let test = (text: string) => text.includes(testedQuery);
  const contains = (position: number, lowerQuery: string) => {
    if (lowerQuery !== testedQuery) {
      testedQuery = lowerQuery;
      test = testFor(lowerQuery, counts);
    }
    return test(lowered[position] as string);
  };

  /** Positions whose texts hold every trigram of `codes` (a superset of the matches, ascending). */
  function candidates(codes: readonly number[]): Int32Array {
    const listed: Int32Array[] = [];
    const sets: Uint32Array[] = [];
    for (const code of codes) {
      const slot = bitsetSlot[code] as number;
      if (slot >= 0) sets.push(bitsets.subarray(slot * wordsPerBitset, (slot + 1) * wordsPerBitset));
      else listed.push(lists.subarray(listStart[code], listStart[code + 1]));
    }
    if (listed.length === 0) return setBits(and(sets));
    return intersect(listed.sort((a, b) => a.length - b.length), sets);
  }

  function queryCandidates(lowerQuery: string): { positions: Int32Array; confirmed: boolean } | null {
    if (lowerQuery.length < 3) return null;
    const codes = new Set<number>();
    forEachTrigram(lowerQuery, (code) => codes.add(code));
    // One trigram of characters with their own symbols: every candidate is a match.
    return { positions: candidates([...codes]), confirmed: lowerQuery.length === 3 && EXACT_SYMBOLS.test(lowerQuery) };
  }

  function computeMatches(lowerQuery: string): Int32Array {
    const found = queryCandidates(lowerQuery);
    if (found === null) return keep(count, (position) => contains(position, lowerQuery));
    const { positions, confirmed } = found;
    return confirmed ? positions : keepInPlace(positions, (position) => contains(position, lowerQuery));
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
    candidates: queryCandidates,
    contains,
  };
}

const hasBit = (words: Uint32Array, position: number) => (((words[position >>> 5] as number) >>> (position & 31)) & 1) === 1;

function and(sets: readonly Uint32Array[]): Uint32Array {
  const [first, ...rest] = sets as [Uint32Array, ...Uint32Array[]];
  const result = first.slice();
  for (const set of rest) for (let w = 0; w < result.length; w++) result[w] = (result[w] as number) & (set[w] as number);
  return result;
}

/** Positions of the set bits, ascending. */
function setBits(words: Uint32Array): Int32Array {
  let total = 0;
  for (const word of words) for (let w = word; w !== 0; w &= w - 1) total++;
  const positions = new Int32Array(total);
  let size = 0;
  words.forEach((word, index) => {
    for (let w = word; w !== 0; w &= w - 1) positions[size++] = index * 32 + (31 - Math.clz32(w & -w));
  });
  return positions;
}

/** The i in [0, count) for which `keepIndex(i)` holds. */
function keep(count: number, keepIndex: (i: number) => boolean): Int32Array {
  const kept = new Int32Array(count);
  let size = 0;
  for (let i = 0; i < count; i++) if (keepIndex(i)) kept[size++] = i;
  return kept.slice(0, size);
}

/**
 * The `positions` for which `keepPosition` holds, compacted within `positions` itself (a fresh
 * candidate list): a common query keeps most of its ~100,000 candidates, and copying them into a new
 * array per search added to the garbage that triggers full collections.
 */
function keepInPlace(positions: Int32Array, keepPosition: (position: number) => boolean): Int32Array {
  let size = 0;
  for (const position of positions) if (keepPosition(position)) positions[size++] = position;
  return positions.subarray(0, size);
}

/** Positions in every list and every bitset: walks the shortest list, one forward cursor per other list. */
function intersect(listsShortestFirst: readonly Int32Array[], sets: readonly Uint32Array[]): Int32Array {
  const [shortest, ...others] = listsShortestFirst as [Int32Array, ...Int32Array[]];
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
    for (const set of sets) if (!hasBit(set, position)) continue outer;
    result[size++] = position;
  }
  return result.subarray(0, size);
}
