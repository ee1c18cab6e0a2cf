import type { ReviewsDocument } from '../schemas/documents.js';
import type { DatasetInput } from '../schemas/input.js';

/** /reviews.json: reviews newest first (date desc, id desc) and the aggregate rating computed from them. */
export declare function buildReviewsDocument(input: DatasetInput): ReviewsDocument;
