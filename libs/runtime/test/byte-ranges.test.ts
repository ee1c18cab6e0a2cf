import { describe, it, expect } from '@jest/globals';
import fc from 'fast-check';
import { ifRangeHolds, requestedRange } from '@reviews/runtime';

describe('Range (RFC 9110 §14.1)', () => {
  it.each([
    ['bytes=0-9', { kind: 'partial', range: { first: 0, last: 9 } }],
    ['bytes=10-', { kind: 'partial', range: { first: 10, last: 99 } }],
    ['bytes=-10', { kind: 'partial', range: { first: 90, last: 99 } }],
    ['bytes=-500', { kind: 'partial', range: { first: 0, last: 99 } }],
    ['bytes=90-500', { kind: 'partial', range: { first: 90, last: 99 } }],
    ['bytes=99-99', { kind: 'partial', range: { first: 99, last: 99 } }],
    ['Bytes=0-0', { kind: 'partial', range: { first: 0, last: 0 } }],
    ['bytes= 0-4 ,\t5-9, ,', { kind: 'partial', range: { first: 0, last: 9 } }],
    ['bytes=50-59,0-9,5-55', { kind: 'partial', range: { first: 0, last: 59 } }],
    ['bytes=0-9,100-200', { kind: 'partial', range: { first: 0, last: 9 } }],
    ['bytes=0-99999999999999999999999', { kind: 'partial', range: { first: 0, last: 99 } }],
    ['bytes=-99999999999999999999999', { kind: 'partial', range: { first: 0, last: 99 } }],
    ['bytes=000010-000019', { kind: 'partial', range: { first: 10, last: 19 } }],
  ] as const)('%p of 100 bytes -> %p', (field, expected) => {
    expect(requestedRange(field, 100)).toEqual(expected);
  });

  it.each(['bytes=100-', 'bytes=100-200', 'bytes=-0', 'bytes=100-,-0', 'bytes=99999999999999999999999-'])('%p of 100 bytes is unsatisfiable', (field) => {
    expect(requestedRange(field, 100)).toEqual({ kind: 'unsatisfiable' });
  });

  it.each([
    // Another unit, or not a ranges-specifier at all: ignored (§14.2).
    'items=0-9',
    'bytes 0-9',
    'bytes =0-9',
    '0-9',
    // Invalid range-specs void the whole field, satisfiable ones beside them too (§14.1.1).
    'bytes=9-0',
    'bytes=100000000000000000001-100000000000000000000',
    'bytes=0-9,x',
    'bytes=-',
    'bytes=0-9-',
    'bytes=+1-2',
    'bytes=0x10-',
    'bytes=',
    'bytes=,',
    'bytes=0-9, bytes=20-29',
    // Ranges with a gap between them would need a multipart body; the whole representation serves them all.
    'bytes=0-9,20-29',
    'bytes=-10,0-9',
  ])('%p is ignored: the whole representation', (field) => {
    expect(requestedRange(field, 100)).toEqual({ kind: 'whole' });
  });

  it('more than 100 range-specs are ignored, though they join into one run', () => {
    const specs = (count: number) => `bytes=${Array.from({ length: count }, (_, i) => `${i}-${i}`).join(',')}`;
    expect(requestedRange(specs(100), 200)).toEqual({ kind: 'partial', range: { first: 0, last: 99 } });
    expect(requestedRange(specs(101), 200)).toEqual({ kind: 'whole' });
  });

  it('an empty representation is sent whole', () => {
    expect(requestedRange('bytes=0-', 0)).toEqual({ kind: 'whole' });
  });

  it('joins exactly the bytes the ranges name, whatever their order, when they form one run', () => {
    const spec = fc.oneof(
      fc.tuple(fc.nat(300), fc.option(fc.nat(300), { nil: undefined })).filter(([first, last]) => last === undefined || last >= first).map(([first, last]) => ({ text: `${first}-${last ?? ''}`, first, last })),
      fc.nat(300).map((suffix) => ({ text: `-${suffix}`, suffix })),
    );
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 250 }), fc.array(spec, { minLength: 1, maxLength: 6 }), (length, specs) => {
        const covered = new Set<number>();
        for (const s of specs) {
          const [from, to] = 'suffix' in s ? [length - s.suffix, length - 1] : [s.first, s.last ?? length - 1];
          for (let i = Math.max(0, from); i <= Math.min(to, length - 1); i++) covered.add(i);
        }
        const positions = [...covered].sort((a, b) => a - b);
        const oneRun = positions.length > 0 && positions[positions.length - 1]! - positions[0]! + 1 === positions.length;
        const expected = positions.length === 0 ? { kind: 'unsatisfiable' } : oneRun ? { kind: 'partial', range: { first: positions[0], last: positions[positions.length - 1] } } : { kind: 'whole' };
        expect(requestedRange(`bytes=${specs.map((s) => s.text).join(', ')}`, length)).toEqual(expected);
      }),
    );
  });
});

describe('If-Range (RFC 9110 §13.1.5)', () => {
  it.each([
    ['"abc"', '"abc"', true],
    [' "abc" ', '"abc"', true],
    ['W/"abc"', '"abc"', false],
    ['"abc"', 'W/"abc"', false],
    ['W/"abc"', 'W/"abc"', false],
    ['"abc-gz"', '"abc"', false],
    ['"abc", "abc"', '"abc"', false],
    ['*', '"abc"', false],
    // A date is not a strong validator here, even the exact Last-Modified.
    ['Sat, 28 Nov 2026 04:31:05 GMT', '"abc"', false],
  ] as const)('%p against the ETag %p -> %p', (field, etag, expected) => {
    expect(ifRangeHolds(field, etag)).toBe(expected);
  });
});
