import { describe, expect, it } from '@jest/globals';
import { createRateLimiter } from '@reviews/runtime';

describe('createRateLimiter', () => {
  /** A limiter on a clock the test moves. */
  function limiterAt(limit: { burst: number; perMinute: number }) {
    let t = 1_000_000;
    const limiter = createRateLimiter(limit, () => t);
    return { limiter, advance: (ms: number) => (t += ms) };
  }

  it('allows a burst, then refuses with the whole seconds until a token is back, rounded up', () => {
    // One token every 6 s.
    const { limiter, advance } = limiterAt({ burst: 2, perMinute: 10 });
    expect([limiter('a'), limiter('a')]).toEqual([{ allowed: true }, { allowed: true }]);
    expect(limiter('a')).toEqual({ allowed: false, retryAfterSeconds: 6 });
    advance(4_500);
    // 1.5 s left: a client waiting 1 s would be refused again.
    expect(limiter('a')).toEqual({ allowed: false, retryAfterSeconds: 2 });
    advance(1_500);
    expect(limiter('a')).toEqual({ allowed: true });
  });

  it('waiting exactly Retry-After is always enough', () => {
    const { limiter, advance } = limiterAt({ burst: 1, perMinute: 7 });
    limiter('a');
    for (let round = 0; round < 20; round++) {
      const refused = limiter('a');
      if (refused.allowed) throw new Error('expected a refusal');
      advance(refused.retryAfterSeconds * 1000);
      expect(limiter('a')).toEqual({ allowed: true });
      advance(333);
    }
  });

  it('keeps a bucket per key', () => {
    const { limiter } = limiterAt({ burst: 1, perMinute: 1 });
    expect(limiter('a')).toEqual({ allowed: true });
    expect(limiter('a').allowed).toBe(false);
    expect(limiter('b')).toEqual({ allowed: true });
  });
});
