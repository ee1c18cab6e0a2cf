import type { InsightsDocument } from '../schemas/documents.js';
import type { DatasetInput } from '../schemas/input.js';

/** /insights.json: every aggregate computed from reviews + per_review, so insights never disagree with reviews. */
export declare function deriveInsights(input: DatasetInput): InsightsDocument;
