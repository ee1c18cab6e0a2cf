import type { z } from 'zod';
import type { Issue } from './schemas/documents.js';

/** zod issues reduced to the public `Issue` shape, so every error envelope carries the same three fields. */
export function toIssues(error: z.ZodError): Issue[] {
  return error.issues.map((issue) => ({
    code: issue.code,
    path: issue.path.map((key) => (typeof key === 'number' ? key : String(key))),
    message: issue.message,
  }));
}

/** An issue that zod cannot see: a broken reference, a duplicate, a repeated parameter. */
export function customIssue(path: Issue['path'], message: string): Issue {
  return { code: 'custom', path, message };
}
