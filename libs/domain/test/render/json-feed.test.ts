import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import { FEED_SIZE, renderJsonFeed } from '@reviews/domain';
import { JsonFeed } from '@reviews/domain/render/json-feed';
import { sampleDocument, TRICKY_REVIEW, URLS } from './sample-document.js';

// Written from the JSON Feed 1.1 spec text, independent of the zod schema the renderer is typed with.
const specSchema: object = JSON.parse(readFileSync(new URL('./fixtures/jsonfeed-1.1.schema.json', import.meta.url), 'utf8'));
const ajv = new Ajv2020({ allErrors: true, strict: true, strictRequired: false });
// ajv-formats is CommonJS: under NodeNext its default export is the module object.
formats.default(ajv);
const validateSpec = ajv.compile(specSchema);

function render(options?: Parameters<typeof sampleDocument>[0]) {
  const doc = sampleDocument(options);
  const text = renderJsonFeed(doc, URLS);
  return { doc, text, feed: JSON.parse(text) as JsonFeed };
}

describe('renderJsonFeed', () => {
  it('produces a valid JSON Feed 1.1 that advertises the hub', () => {
    const { feed } = render();
    expect(validateSpec(feed) ? [] : validateSpec.errors).toEqual([]);
    expect(JsonFeed.safeParse(feed).error?.issues ?? []).toEqual([]);
    expect(feed).toMatchObject({
      version: 'https://jsonfeed.org/version/1.1',
      title: 'Evergreen Funeral Home & Crematory — reviews',
      home_page_url: 'https://evergreen.example.com',
      feed_url: 'https://reviews.example.com/api/feed.json',
      language: 'en',
      hubs: [{ type: 'WebSub', url: 'https://reviews.example.com/api/websub/hub' }],
    });
  });

  it('has an oracle that rejects what JSON Feed forbids', () => {
    const { feed } = render();
    const item = feed.items[0];
    expect(validateSpec({ ...feed, items: [{ ...item, authors: [{ name: 'A', avatar: null }] }] })).toBe(false);
    expect(validateSpec({ ...feed, items: [{ id: 'x', title: 'no content' }] })).toBe(false);
    expect(validateSpec({ ...feed, unknown_key: 1 })).toBe(false);
  });

  it(`holds the ${FEED_SIZE} newest reviews, newest first`, () => {
    const { doc, feed } = render({ reviews: 80 });
    expect(feed.items.map((item) => item.id)).toEqual(doc.reviews.slice(0, FEED_SIZE).map((review) => review.id));
    const published = feed.items.map((item) => item.date_published);
    expect(published).toEqual([...published].sort().reverse());
  });

  it('maps a review to an item: title, text with owner reply, dates, author without null avatar, extension', () => {
    const { feed } = render();
    const tricky = feed.items[0];
    expect(tricky).toEqual({
      id: TRICKY_REVIEW.id,
      url: `https://reviews.example.com/reviews.json#${TRICKY_REVIEW.id}`,
      title: `★★☆☆☆ 2/5 by ${TRICKY_REVIEW.author}`,
      content_text: `${TRICKY_REVIEW.text}\n\nReply from Evergreen Funeral Home & Crematory (2100-01-02): We are sorry — please call us <any time>.`,
      date_published: '2099-12-31T00:00:00Z',
      date_modified: '2100-01-02T00:00:00Z',
      authors: [{ name: TRICKY_REVIEW.author, avatar: TRICKY_REVIEW.author_avatar_url }],
      _review: { about: 'https://reviews.example.com/.well-known/openapi.json', rating: 2, source: 'google', verified: false },
    });
    const plain = feed.items[1];
    expect(plain?.authors).toEqual([{ name: expect.any(String) }]);
    expect(plain).not.toHaveProperty('date_modified');
    expect(plain?.url).toMatch(/^https:\/\/maps\.example\.com\/review\/\d+$/);
  });

  it('words a rating-only review instead of leaving the content empty', () => {
    const { doc, feed } = render({ tricky: false });
    const ratingOnly = doc.reviews.find((review) => review.text === null && review.owner_reply === null);
    const item = feed.items.find((candidate) => candidate.id === ratingOnly?.id);
    expect(item?.content_text).toBe(`Rating-only review: ${ratingOnly?.rating} out of 5 stars.`);
  });

  it('is valid with no reviews, and byte-stable', () => {
    const { doc, text, feed } = render({ reviews: 0, tricky: false });
    expect(feed.items).toEqual([]);
    expect(validateSpec(feed) ? [] : validateSpec.errors).toEqual([]);
    expect(renderJsonFeed(structuredClone(doc), URLS)).toBe(text);
  });
});
