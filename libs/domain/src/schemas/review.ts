import { z } from 'zod';
import { HttpUrl, IsoDate, Ulid } from './primitives.js';

export const OwnerReply = z.strictObject({ text: z.string().min(1), date: IsoDate });

export const Review = z
  .strictObject({
    id: Ulid,
    author: z.string().min(1),
    author_avatar_url: HttpUrl.nullable(),
    rating: z.int().min(1).max(5),
    date: IsoDate,
    text: z.string().min(1).nullable().meta({ description: 'Review text; null for a rating-only review.' }),
    source: z.string().min(1).meta({ examples: ['google'] }),
    source_url: HttpUrl.nullable(),
    owner_reply: OwnerReply.nullable(),
    verified: z.boolean().meta({ description: 'True when the review comes from a verified source (e.g. a platform that checks the reviewer). Unverified reviews are published too, flagged, as the dataset holds them.' }),
  })
  .meta({ id: 'Review', description: 'A customer review as the publisher curated it; `verified` says whether it comes from a verified source. Every key is always present; nullable keys carry null.' });
export type Review = z.infer<typeof Review>;
