import type { Issue } from './schemas/documents.js';
import type { DatasetInput } from './schemas/input.js';

export type ValidationResult = { ok: true; input: DatasetInput } | { ok: false; issues: Issue[] };

/**
 * Schema validation plus referential integrity: duplicate review ids, per_review keys, FAQ sources,
 * technician/service/problem/topic references must all resolve. Every issue carries its path.
 */
export declare function validateDataset(raw: unknown): ValidationResult;
