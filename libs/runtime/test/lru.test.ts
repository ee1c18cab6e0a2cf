import { describe, it, expect } from '@jest/globals';
import { BoundedLru } from '@reviews/runtime';

describe('BoundedLru', () => {
  const sized = (maxEntries: number, maxBytes: number) => new BoundedLru<string>(maxEntries, maxBytes, (value) => value.length);

  it('evicts the least recently used entry beyond the entry bound', () => {
    const lru = sized(2, 1000);
    lru.set('a', 'x');
    lru.set('b', 'x');
    expect(lru.get('a')).toBe('x');
    lru.set('c', 'x');
    expect(lru.get('b')).toBeUndefined();
    expect(lru.get('a')).toBe('x');
    expect(lru.get('c')).toBe('x');
    expect(lru.size).toBe(2);
  });

  it('evicts until the byte bound holds, and never stores a value larger than the bound', () => {
    const lru = sized(100, 10);
    lru.set('a', '12345');
    lru.set('b', '12345');
    lru.set('c', '123');
    expect(lru.get('a')).toBeUndefined();
    expect(lru.size).toBe(2);
    lru.set('huge', '12345678901');
    expect(lru.get('huge')).toBeUndefined();
    expect(lru.size).toBe(2);
  });

  it('replacing a key updates its size', () => {
    const lru = sized(100, 10);
    lru.set('a', '1234567890');
    lru.set('a', '1');
    lru.set('b', '123456789');
    expect(lru.get('a')).toBe('1');
    expect(lru.get('b')).toBe('123456789');
  });
});
