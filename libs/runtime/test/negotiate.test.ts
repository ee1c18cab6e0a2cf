import { describe, it, expect } from '@jest/globals';
import type { ContentCoding } from '@reviews/domain';
import { chooseContentCoding } from '@reviews/runtime';

const all = new Set<ContentCoding>(['identity', 'gzip', 'br']);

describe('chooseContentCoding', () => {
  it.each([
    [undefined, 'identity'],
    ['', 'identity'],
    ['gzip, deflate, br', 'br'],
    ['gzip', 'gzip'],
    ['x-gzip', 'gzip'],
    ['GZIP', 'gzip'],
    ['br;q=0.5, gzip;q=0.8', 'gzip'],
    ['br;q=0, gzip;q=0', 'identity'],
    ['br;q=0', 'identity'],
    ['*', 'br'],
    ['*;q=0.5, br;q=0', 'gzip'],
    ['identity;q=0, *;q=0', 'identity'],
    ['identity', 'identity'],
    ['br;q=0.8, identity;q=0.9', 'identity'],
    ['gzip;q=1.0, br;q=1.000', 'br'],
    ['br;q=2, gzip', 'gzip'],
    // Above 1 or with more than three decimals, a qvalue voids its element (RFC 9110 §12.4.2).
    ['br;q=1.5, gzip;q=0.9', 'gzip'],
    ['br;q=0.5000, gzip;q=0.1', 'gzip'],
    ['br;q=0.001, gzip;q=0', 'br'],
    ['br;q=abc', 'identity'],
    ['deflate', 'identity'],
  ] as const)('%p -> %p', (header, expected) => {
    expect(chooseContentCoding(header, all)).toBe(expected);
  });

  it('only offers codings the representation has', () => {
    expect(chooseContentCoding('br, gzip', new Set<ContentCoding>(['identity']))).toBe('identity');
    expect(chooseContentCoding('br;q=1, gzip;q=0.5', new Set<ContentCoding>(['identity', 'gzip']))).toBe('gzip');
  });
});
