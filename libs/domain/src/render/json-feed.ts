import { z } from 'zod';
import { HttpUrl, IsoDateTime, Ulid } from '../schemas/primitives.js';
import { Review } from '../schemas/review.js';

/** Spec §8: the feeds hold the 50 newest reviews. */
export const FEED_SIZE = 50;

export const JSON_FEED_VERSION = 'https://jsonfeed.org/version/1.1';

const FeedAuthor = z.strictObject({
  name: z.string().min(1),
  url: HttpUrl.optional(),
  avatar: HttpUrl.optional().meta({ description: 'Omitted when the reviewer has no avatar (JSON Feed forbids null).' }),
});

const ReviewExtension = z
  .strictObject({
    about: HttpUrl.meta({ description: 'Where this extension is described (this OpenAPI document).' }),
    rating: Review.shape.rating,
    source: Review.shape.source,
    verified: Review.shape.verified,
  })
  .meta({ description: 'JSON Feed extension object with the review facts a feed reader cannot parse from the title.' });

/** The JSON Feed 1.1 this service publishes: the subset of the format it uses, plus its `_review` extension. */
export const JsonFeed = z
  .strictObject({
    version: z.literal(JSON_FEED_VERSION),
    title: z.string().min(1),
    home_page_url: HttpUrl,
    feed_url: HttpUrl,
    description: z.string(),
    language: z.literal('en'),
    authors: z.array(FeedAuthor).min(1),
    hubs: z.array(z.strictObject({ type: z.literal('WebSub'), url: HttpUrl })).length(1),
    items: z
      .array(
        z.strictObject({
          id: Ulid.meta({ description: 'The review id.' }),
          url: HttpUrl.meta({ description: 'The review at its source, or its anchor in /reviews.json when the source has no URL.' }),
          title: z.string().meta({ examples: ['★★★★☆ 4/5 by Jane D.'] }),
          content_text: z.string().meta({ description: 'Review text (or a rating-only line), followed by the owner reply when there is one.' }),
          date_published: IsoDateTime.meta({ description: 'The review date at 00:00:00Z.' }),
          date_modified: IsoDateTime.optional().meta({ description: 'The owner reply date at 00:00:00Z, when the reply came after the review.' }),
          authors: z.array(FeedAuthor).length(1),
          _review: ReviewExtension,
        }),
      )
      .max(FEED_SIZE)
      .meta({ description: `The ${FEED_SIZE} newest reviews, newest first (date, then id, descending).` }),
  })
  .meta({ id: 'JsonFeed', description: `JSON Feed 1.1 (${JSON_FEED_VERSION}) of the ${FEED_SIZE} newest reviews, advertising the WebSub hub in \`hubs\`.` });
export type JsonFeed = z.output<typeof JsonFeed>;
export type JsonFeedItem = JsonFeed['items'][number];
export type JsonFeedAuthor = z.output<typeof FeedAuthor>;
