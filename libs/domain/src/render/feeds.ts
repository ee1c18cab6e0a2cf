import type { ReviewsDocument } from '../schemas/documents.js';
import type { Review } from '../schemas/review.js';
import type { PublicUrls } from '../urls.js';
import { FEED_SIZE, JSON_FEED_VERSION, type JsonFeed, type JsonFeedAuthor, type JsonFeedItem } from './json-feed.js';
import { atomIds } from './atom-ids.js';
import { serializeXml, type XmlElement } from './xml.js';

export { FEED_SIZE } from './json-feed.js';

const ATOM_NAMESPACE = 'http://www.w3.org/2005/Atom';

/** Both feeds present a review the same way; only the envelope differs. */
interface FeedEntry {
  readonly id: string;
  readonly url: string;
  readonly title: string;
  readonly content: string;
  readonly published: string;
  /** Later than `published` only when the owner replied after the review. */
  readonly updated: string;
  readonly review: Review;
}

/** Review dates are calendar days; feeds need instants, so a day is its first instant in UTC. */
function startOfDay(date: string): string {
  return `${date}T00:00:00Z`;
}

function stars(rating: number): string {
  return '★'.repeat(rating) + '☆'.repeat(5 - rating);
}

function feedTitle(doc: ReviewsDocument): string {
  return `${doc.business.name} — reviews`;
}

function feedDescription(doc: ReviewsDocument): string {
  return `The ${FEED_SIZE} newest customer reviews of ${doc.business.name}, newest first.`;
}

function entryContent(review: Review, businessName: string): string {
  const body = review.text ?? `Rating-only review: ${review.rating} out of 5 stars.`;
  if (review.owner_reply === null) return body;
  return `${body}\n\nReply from ${businessName} (${review.owner_reply.date}): ${review.owner_reply.text}`;
}

function feedEntries(doc: ReviewsDocument, urls: PublicUrls): FeedEntry[] {
  // doc.reviews is already newest first (date, then id, descending).
  return doc.reviews.slice(0, FEED_SIZE).map((review) => {
    const replyDate = review.owner_reply?.date;
    return {
      id: review.id,
      url: review.source_url ?? `${urls.reviews}#${review.id}`,
      title: `${stars(review.rating)} ${review.rating}/5 by ${review.author}`,
      content: entryContent(review, doc.business.name),
      published: startOfDay(review.date),
      updated: startOfDay(replyDate !== undefined && replyDate > review.date ? replyDate : review.date),
      review,
    };
  });
}

/**
 * The feed changed when its newest entry did. Without entries the dataset's own timestamp stands in,
 * normalised to UTC. Derived from the document only, so every replica renders the same bytes.
 */
function feedUpdated(doc: ReviewsDocument, entries: readonly FeedEntry[]): string {
  const latest = entries.reduce<string | undefined>((max, entry) => (max === undefined || entry.updated > max ? entry.updated : max), undefined);
  return latest ?? new Date(doc.generated_at).toISOString();
}

function jsonFeedItem(entry: FeedEntry, urls: PublicUrls): JsonFeedItem {
  const { review } = entry;
  // JSON Feed forbids null, so an absent avatar is an absent key.
  const author: JsonFeedAuthor = review.author_avatar_url === null ? { name: review.author } : { name: review.author, avatar: review.author_avatar_url };
  return {
    id: entry.id,
    url: entry.url,
    title: entry.title,
    content_text: entry.content,
    date_published: entry.published,
    ...(entry.updated === entry.published ? {} : { date_modified: entry.updated }),
    authors: [author],
    _review: { about: urls.openapi, rating: review.rating, source: review.source, verified: review.verified },
  };
}

/** JSON Feed 1.1 of the 50 newest reviews, with `hubs`. */
export function renderJsonFeed(doc: ReviewsDocument, urls: PublicUrls): string {
  const feed: JsonFeed = {
    version: JSON_FEED_VERSION,
    title: feedTitle(doc),
    home_page_url: doc.business.url,
    feed_url: urls.feedJson,
    description: feedDescription(doc),
    language: 'en',
    authors: [{ name: doc.business.name, url: doc.business.url }],
    hubs: [{ type: 'WebSub', url: urls.hub }],
    items: feedEntries(doc, urls).map((entry) => jsonFeedItem(entry, urls)),
  };
  return JSON.stringify(feed);
}

function atomEntry(entry: FeedEntry, id: string): XmlElement {
  return {
    name: 'entry',
    children: [
      { name: 'id', text: id },
      { name: 'title', attributes: { type: 'text' }, text: entry.title },
      { name: 'published', text: entry.published },
      { name: 'updated', text: entry.updated },
      { name: 'author', children: [{ name: 'name', text: entry.review.author }] },
      { name: 'content', attributes: { type: 'text' }, text: entry.content },
      { name: 'link', attributes: { rel: 'alternate', href: entry.url } },
    ],
  };
}

/** Atom 1.0 (RFC 4287) of the 50 newest reviews, with rel="hub" and rel="self" links. */
export function renderAtomFeed(doc: ReviewsDocument, urls: PublicUrls): string {
  const entries = feedEntries(doc, urls);
  const ids = atomIds(doc.business.id);
  return serializeXml({
    name: 'feed',
    attributes: { xmlns: ATOM_NAMESPACE, 'xml:lang': 'en' },
    children: [
      { name: 'id', text: ids.feed },
      { name: 'title', attributes: { type: 'text' }, text: feedTitle(doc) },
      { name: 'subtitle', attributes: { type: 'text' }, text: feedDescription(doc) },
      { name: 'updated', text: feedUpdated(doc, entries) },
      { name: 'author', children: [{ name: 'name', text: doc.business.name }, { name: 'uri', text: doc.business.url }] },
      { name: 'link', attributes: { rel: 'self', type: 'application/atom+xml', href: urls.feedAtom } },
      { name: 'link', attributes: { rel: 'hub', href: urls.hub } },
      { name: 'link', attributes: { rel: 'alternate', type: 'text/html', href: doc.business.url } },
      ...entries.map((entry) => atomEntry(entry, ids.entry(entry.id))),
    ],
  });
}
