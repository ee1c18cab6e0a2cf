import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { createTextIndex } from '@reviews/domain/search/text-index';

/** Reference: every position whose lower-cased text includes the lower-cased query. */
const naive = (texts: string[], query: string) => texts.flatMap((text, position) => (text.toLowerCase().includes(query) ? [position] : []));

describe('text index', () => {
  // A small alphabet makes queries hit, miss and collide in the folded trigram buckets.
  const alphabet = fc.constantFrom('a', 'B', 'c', ' ', '.', '|', ',', 'é', 'É', 'İ', 'ß', '1', '😀'); // '.' and '|' share a bucket
  const text = fc.array(alphabet, { maxLength: 24 }).map((chars) => chars.join(''));

  it('finds exactly the texts containing the query, for short and long queries and any number of texts', () => {
    fc.assert(
      fc.property(fc.array(text, { maxLength: 120 }), fc.array(fc.array(alphabet, { minLength: 1, maxLength: 5 }), { minLength: 1, maxLength: 8 }), (texts, queries) => {
        const index = createTextIndex(texts);
        for (const query of [...queries, ...queries].map((chars) => chars.join('').toLowerCase())) {
          expect(Array.from(index.matches(query))).toEqual(naive(texts, query));
        }
      }),
      { numRuns: 150, seed: 424242 },
    );
  });

  // Texts that repeat a query's tail many times send the substring test past its near-miss limit, to `includes`.
  it('finds exactly the texts containing the query in repetitive texts too', () => {
    const repetitive = fc.array(fc.constantFrom('a', 'b', 'ab', 'aaaa', 'bbbbbbbb'), { maxLength: 60 }).map((parts) => parts.join(''));
    fc.assert(
      fc.property(fc.array(repetitive, { minLength: 1, maxLength: 20 }), fc.array(fc.stringMatching(/^[ab]{2,12}$/), { minLength: 1, maxLength: 6 }), (texts, queries) => {
        const index = createTextIndex([...texts, 'bab', 'ab']);
        for (const query of queries) expect(Array.from(index.matches(query))).toEqual(naive([...texts, 'bab', 'ab'], query));
      }),
      { numRuns: 200, seed: 4242 },
    );
  });

  // A publisher's audit: one 5 MB review of "q"s made each search for "eqq…q" cost a second of the serving thread.
  it('tests a query against a text repeating its tail in time linear in the text', () => {
    // After the 2,000 texts whose characters rank their rarity: "q" counts as rarer than "e".
    const texts = [...Array.from({ length: 2_000 }, (_, i) => `the staff were kind ${i}`), 'eqqx' + 'q'.repeat(2_000_000)];
    const index = createTextIndex(texts);
    const started = performance.now();
    for (const length of [100, 150, 198]) expect(Array.from(index.matches('e' + 'q'.repeat(length)))).toEqual([]);
    // Near misses one by one took ~700 ms here; includes takes a few.
    expect(performance.now() - started).toBeLessThan(250);
  });

  it('confirms candidates whose trigrams only collide in a folded bucket', () => {
    const index = createTextIndex(['a|b', 'a.b']);
    expect(Array.from(index.matches('a.b'))).toEqual([1]);
    expect(Array.from(index.matches('x|b'))).toEqual([]);
  });

  it('stores common trigrams as bitsets and rare ones as lists, and intersects both', () => {
    const texts = Array.from({ length: 200 }, (_, i) => (i % 3 === 0 ? `the kind staff ${i}` : `the staff ${i}`));
    const index = createTextIndex(texts);
    expect(Array.from(index.matches('the'))).toEqual(naive(texts, 'the'));
    expect(Array.from(index.matches('kind staff 3'))).toEqual(naive(texts, 'kind staff 3'));
    expect(Array.from(index.matches('staff 19'))).toEqual([19, 190, 191, 192, 193, 194, 195, 196, 197, 198, 199]);
  });

  it('lists a text once however often it repeats a rare trigram', () => {
    // Among 100 texts without it, "xyz" is rare enough to be stored as a list.
    const texts = [...Array.from({ length: 100 }, (_, i) => `the staff ${i}`), 'xyz and xyz again'];
    expect(Array.from(createTextIndex(texts).matches('xyz'))).toEqual([100]);
  });

  it('keeps answering correctly after more distinct queries than it remembers', () => {
    const texts = Array.from({ length: 50 }, (_, i) => `review number ${i}`);
    const index = createTextIndex(texts);
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < 100; i++) expect(Array.from(index.matches(`number ${i}`))).toEqual(naive(texts, `number ${i}`));
    }
  });
});
