import type { Representation, Snapshot } from '@reviews/domain';
import { BoundedLru } from '@reviews/runtime';
import { representationBytes, withVariantFor } from './query-representation.js';

const MAX_CACHED_RESULTS = 1000;
const MAX_CACHED_BYTES = 32 * 1024 * 1024;

/**
 * Query results memoized per dataset version: the cache hangs off the snapshot, so a swap starts a
 * fresh cache and the old one is collected with the old snapshot. An entry starts with the identity
 * body and gains each compressed variant the first time a request negotiates it.
 */
export class QueryCache {
  readonly #bySnapshot = new WeakMap<Snapshot, BoundedLru<Representation>>();

  /** The result for `key` (`build` makes it on a miss), holding (at least) the variant `acceptEncoding` negotiates. */
  get(snapshot: Snapshot, key: string, acceptEncoding: string | undefined, build: () => Representation): Representation {
    let cache = this.#bySnapshot.get(snapshot);
    if (!cache) {
      cache = new BoundedLru<Representation>(MAX_CACHED_RESULTS, MAX_CACHED_BYTES, representationBytes);
      this.#bySnapshot.set(snapshot, cache);
    }
    const cached = cache.get(key);
    const representation = withVariantFor(cached ?? build(), acceptEncoding);
    // Stored again whenever it changed, so the LRU accounts for the added variant's bytes.
    if (representation !== cached) cache.set(key, representation);
    return representation;
  }
}

/** Cache key of a parsed parameter object: the same filters in any order give the same key. */
export function normalizedKey(kind: string, params: object): string {
  const entries = Object.entries(params)
    .filter(([, value]) => value !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `${kind}:${JSON.stringify(entries)}`;
}
