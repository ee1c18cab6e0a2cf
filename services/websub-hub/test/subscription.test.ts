import { describe, expect, it } from '@jest/globals';
import { grantLease, isActive } from '../src/subscription.js';
import { sampleSubscription } from './store-contract.js';

describe('a subscription\'s lease', () => {
  it('is over at the instant it expires: no notification is owed from then on', () => {
    const subscription = sampleSubscription('https://a.example/cb', { expiresAt: 601_000 });
    expect(isActive(subscription, 600_999)).toBe(true);
    expect(isActive(subscription, 601_000)).toBe(false);
  });

  it('is granted as requested within the bounds, clamped outside them, and the default when none is asked', () => {
    const bounds = { defaultSeconds: 864_000, minSeconds: 3_600, maxSeconds: 864_000 };
    expect(grantLease(86_400, bounds)).toBe(86_400);
    expect(grantLease(60, bounds)).toBe(3_600);
    expect(grantLease(10 ** 12, bounds)).toBe(864_000);
    expect(grantLease(null, { ...bounds, defaultSeconds: 7_200 })).toBe(7_200);
  });
});
