import { createHash } from 'node:crypto';

/** This service's namespace for business feeds (a random UUID, RFC 9562 §6.5): a feed's name in it is the business's id. */
const FEED_NAMESPACE = '031cba91-26dc-4cc1-8d90-49308eb016ca';

/** A name-based UUID (version 5, SHA-1; RFC 9562 §5.5): the same namespace and name always give the same UUID. */
function nameBasedUuid(namespace: string, name: string): string {
  const hash = createHash('sha1').update(Buffer.from(namespace.replaceAll('-', ''), 'hex')).update(name, 'utf8').digest();
  hash[6] = (hash[6]! & 0x0f) | 0x50;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  const hex = hash.toString('hex', 0, 16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * Atom ids must not change when a feed is relocated or republished (RFC 4287 §4.2.6), so they derive
 * from neither BASE_URL, which moves with a deployment, nor the business's website, which moves too
 * (http to https, a trailing slash, a new domain: each had re-issued every entry to feed readers):
 * the feed's from the business's id, each entry's from the feed's and the review's permanent ULID.
 */
export function atomIds(businessId: string): { feed: string; entry: (reviewId: string) => string } {
  const feed = nameBasedUuid(FEED_NAMESPACE, businessId);
  return { feed: `urn:uuid:${feed}`, entry: (reviewId) => `urn:uuid:${nameBasedUuid(feed, reviewId)}` };
}
