import type { ReviewsDocument } from '../schemas/documents.js';
import type { PublicUrls } from '../urls.js';

export const FEED_SIZE = 50;

/** JSON Feed 1.1 of the 50 newest reviews, with `hubs`. */
export declare function renderJsonFeed(doc: ReviewsDocument, urls: PublicUrls): string;
/** Atom 1.0 (RFC 4287) of the 50 newest reviews, with rel="hub" and rel="self" links. */
export declare function renderAtomFeed(doc: ReviewsDocument, urls: PublicUrls): string;
