import { describe, it, expect, beforeEach, afterEach } from '@jest/globals';
import type { SubscriptionStore } from '../src/store/subscription-store.js';
import { subscriptionKey, type Subscription, type UnsubscribeMark } from '../src/subscription.js';

/** A store under test, plus a second handle on the SAME state (another replica, or the process after a restart). */
export interface StoreFixture {
  readonly store: SubscriptionStore;
  reopen(): Promise<SubscriptionStore>;
  dispose(): Promise<void>;
}

export function sampleSubscription(callback: string, overrides: Partial<Subscription> = {}): Subscription {
  const topicUrl = 'https://reviews.example.com/reviews.json';
  return {
    key: subscriptionKey(topicUrl, callback),
    topic: 'reviews',
    topicUrl,
    callback,
    secret: 'k',
    leaseSeconds: 600,
    verifiedAt: 1_000,
    expiresAt: 601_000,
    requestedAt: 1_000,
    failures: 0,
    deliveredEtag: null,
    lastStatus: null,
    lastAttemptAt: null,
    ...overrides,
  };
}

/** What a verified unsubscribe of `callback` leaves under its key. */
export function sampleMark(callback: string): UnsubscribeMark {
  const { key } = sampleSubscription(callback);
  return { key, unsubscribed: true, requestedAt: 2_000, forgetAt: 362_000 };
}

/** The one contract every SubscriptionStore implementation honours. */
export function describeSubscriptionStoreContract(name: string, open: () => Promise<StoreFixture>): void {
  describe(`SubscriptionStore contract: ${name}`, () => {
    let fixture: StoreFixture;
    beforeEach(async () => {
      fixture = await open();
    });
    afterEach(async () => {
      await fixture.dispose();
    });

    it('creates, reads, lists, changes and deletes a subscription', async () => {
      const { store } = fixture;
      const sub = sampleSubscription('https://a.example/cb');
      expect(await store.get(sub.key)).toBeNull();
      expect(await store.update(sub.key, () => sub)).toEqual(sub);
      expect(await store.get(sub.key)).toEqual(sub);
      expect(await store.list()).toEqual([sub]);
      const changed = await store.update(sub.key, (cur) => (cur ? { ...cur, failures: 2 } : undefined));
      expect(changed?.failures).toBe(2);
      expect(await store.update(sub.key, () => null)).toBeNull();
      expect(await store.get(sub.key)).toBeNull();
      expect(await store.list()).toEqual([]);
      // A deleted key can be created again.
      expect(await store.update(sub.key, () => sub)).toEqual(sub);
    });

    it('lists each subscription once, with its latest value, and none deleted nor any topic state', async () => {
      const { store } = fixture;
      const subs = Array.from({ length: 40 }, (_, i) => sampleSubscription(`https://list.example/cb/${i}`));
      await Promise.all(subs.map((sub) => store.update(sub.key, () => sub)));
      await store.updateTopicState('reviews', () => ({ etag: '"r"', seq: 1, publishedAtMs: 1 }));
      for (let round = 1; round <= 3; round++) {
        await Promise.all(subs.slice(0, 10).map((sub) => store.update(sub.key, (cur) => (cur ? { ...cur, failures: round } : undefined))));
      }
      await Promise.all(subs.slice(30).map((sub) => store.update(sub.key, () => null)));
      const listed = await store.list();
      const byCallback = (a: { callback: string }, b: { callback: string }) => a.callback.localeCompare(b.callback);
      const expected = subs.slice(0, 30).map((sub, i) => (i < 10 ? { ...sub, failures: 3 } : sub));
      expect([...listed].sort(byCallback)).toEqual(expected.sort(byCallback));
    });

    it('leaves the value alone when the change returns undefined', async () => {
      const { store } = fixture;
      const sub = sampleSubscription('https://b.example/cb');
      await store.update(sub.key, () => sub);
      expect(await store.update(sub.key, () => undefined)).toEqual(sub);
      expect(await store.update('absent', () => undefined)).toBeNull();
      expect(await store.get('absent')).toBeNull();
    });

    it('applies concurrent updates atomically: none is lost', async () => {
      const { store } = fixture;
      const sub = sampleSubscription('https://c.example/cb');
      await store.update(sub.key, () => sub);
      await Promise.all(Array.from({ length: 12 }, () => store.update(sub.key, (cur) => (cur ? { ...cur, failures: cur.failures + 1 } : undefined))));
      expect((await store.get(sub.key))?.failures).toBe(12);
    });

    it('keeps per-topic announcement state with compare-and-set semantics', async () => {
      const { store } = fixture;
      expect(await store.topicState('feedAtom')).toBeNull();
      await store.updateTopicState('feedAtom', () => ({ etag: '"a"', seq: 1, publishedAtMs: 1 }));
      const lost = await store.updateTopicState('feedAtom', (cur) => ((cur?.seq ?? 0) === 0 ? { etag: '"b"', seq: 1, publishedAtMs: 2 } : undefined));
      expect(lost).toEqual({ etag: '"a"', seq: 1, publishedAtMs: 1 });
      await store.updateTopicState('feedAtom', (cur) => ({ etag: '"c"', seq: (cur?.seq ?? 0) + 1, publishedAtMs: 3 }));
      expect(await store.topicState('feedAtom')).toEqual({ etag: '"c"', seq: 2, publishedAtMs: 3 });
      expect(await store.topicState('reviews')).toBeNull();
    });

    it('counts its records, subscriptions and marks alike, and no longer those removed', async () => {
      const { store } = fixture;
      const before = (await store.listRecords()).length;
      const subscriptions = ['https://c.example/1', 'https://c.example/2'].map((callback) => sampleSubscription(callback));
      for (const s of subscriptions) await store.update(s.key, () => s);
      const mark = sampleMark('https://c.example/mark');
      await store.updateRecord(mark.key, () => mark);
      expect((await store.listRecords()).length).toBe(before + 3);
      await store.update(subscriptions[0]!.key, () => null);
      expect((await store.listRecords()).length).toBe(before + 2);
    });

    it('keeps an unsubscribe mark where only records are read and written: get, list and update see no subscription there', async () => {
      const { store } = fixture;
      const other = sampleSubscription('https://m.example/other');
      await store.update(other.key, () => other);
      const mark = sampleMark('https://m.example/cb');
      expect(await store.updateRecord(mark.key, () => mark)).toEqual(mark);
      expect(await store.get(mark.key)).toBeNull();
      expect(await store.list()).toEqual([other]);
      const byKey = (a: { key: string }, b: { key: string }) => a.key.localeCompare(b.key);
      expect([...(await store.listRecords())].sort(byKey)).toEqual([other, mark].sort(byKey));

      // A change to the subscription finds none; leaving it alone or deleting it keeps the mark.
      const seen: Array<Subscription | null> = [];
      const countFailure = (cur: Subscription | null) => {
        seen.push(cur);
        return cur ? { ...cur, failures: cur.failures + 1 } : undefined;
      };
      expect(await store.update(mark.key, countFailure)).toBeNull();
      expect(seen).toEqual([null]);
      expect(await store.update(mark.key, () => null)).toBeNull();
      expect((await store.listRecords()).filter((r) => r.key === mark.key)).toEqual([mark]);

      // The record-level change sees the mark; a subscription written there replaces it.
      const seenRecords: unknown[] = [];
      await store.updateRecord(mark.key, (cur) => {
        seenRecords.push(cur);
        return undefined;
      });
      expect(seenRecords).toEqual([mark]);
      const back = sampleSubscription('https://m.example/cb', { requestedAt: 3_000 });
      expect(await store.updateRecord(mark.key, () => back)).toEqual(back);
      expect(await store.get(mark.key)).toEqual(back);

      // And a mark can replace a subscription, and be deleted.
      await store.updateRecord(mark.key, () => mark);
      expect(await store.get(mark.key)).toBeNull();
      expect(await store.updateRecord(mark.key, () => null)).toBeNull();
      expect(await store.listRecords()).toEqual([other]);
    });

    it('is durable: another handle (restart, other replica) sees the same state', async () => {
      const sub = sampleSubscription('https://d.example/cb?x=1');
      const mark = sampleMark('https://d.example/left');
      await fixture.store.update(sub.key, () => sub);
      await fixture.store.updateRecord(mark.key, () => mark);
      await fixture.store.updateTopicState('reviews', () => ({ etag: '"r"', seq: 7, publishedAtMs: 9 }));
      const again = await fixture.reopen();
      expect(await again.get(sub.key)).toEqual(sub);
      expect(await again.get(mark.key)).toBeNull();
      expect((await again.listRecords()).find((r) => r.key === mark.key)).toEqual(mark);
      expect(await again.topicState('reviews')).toEqual({ etag: '"r"', seq: 7, publishedAtMs: 9 });
      await again.close();
    });
  });
}
