import { z } from 'zod';
import { HttpUrl, IsoDate, Ulid, VisibleText, visibleText } from './primitives.js';

export const OwnerReply = z.strictObject({ text: visibleText('a review without a reply has "owner_reply": null'), date: IsoDate });

export const Review = z
  .strictObject({
    id: Ulid,
    author: VisibleText,
    author_avatar_url: HttpUrl.nullable(),
    rating: z.int().min(1).max(5),
    date: IsoDate,
    text: visibleText('a rating-only review has "text": null').nullable().meta({ description: 'Review text; null for a rating-only review.' }),
    source: z.string().min(1).meta({ examples: ['google'] }),
    source_url: HttpUrl.nullable(),
    owner_reply: OwnerReply.nullable(),
    verified: z.boolean().meta({ description: 'True when the review comes from a verified source (e.g. a platform that checks the reviewer). A dataset may hold unverified reviews; the service publishes only verified ones, so every review it serves carries true.' }),
  })
  .meta({ id: 'Review', description: 'A verified customer review as the publisher curated it. Every key is always present; nullable keys carry null.' });
export type Review = z.infer<typeof Review>;
