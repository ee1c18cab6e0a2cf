import type { z } from 'zod';
import type { Issue } from './schemas/documents.js';

/**
 * zod issues reduced to the public `Issue` shape, so every error envelope carries the same three
 * fields. An unknown-keys issue becomes one issue per key with the key in its path, so the path
 * names the offending parameter or field.
 */
export function toIssues(error: z.ZodError): Issue[] {
  return error.issues.flatMap((issue): Issue[] => {
    const path = issue.path.map((key) => (typeof key === 'number' ? key : String(key)));
    if (issue.code !== 'unrecognized_keys') return [{ code: issue.code, path, message: issue.message }];
    return issue.keys.map((key) => ({ code: issue.code, path: [...path, key], message: `Unrecognized key: "${key}"` }));
  });
}

/** An issue that zod cannot see: a broken reference, a duplicate, a repeated parameter. */
export function customIssue(path: Issue['path'], message: string): Issue {
  return { code: 'custom', path, message };
}

/** An issue's path as people write it, `reviews[0].rating`; `(root)` for the document itself. One spelling in every log and CLI. */
export function formatIssuePath(path: readonly (string | number)[]): string {
  if (path.length === 0) return '(root)';
  return path.map((key, i) => (typeof key === 'number' ? `[${key}]` : i === 0 ? key : `.${key}`)).join('');
}
