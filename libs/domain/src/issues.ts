import type { z } from 'zod';
import type { Issue } from './schemas/documents.js';

/**
 * zod issues reduced to the public `Issue` shape, so every error envelope carries the same three
 * fields. An unknown-keys issue becomes one issue per key with the key in its path, so the path
 * names the offending parameter or field.
 */
export function toIssues(error: z.ZodError): Issue[] {
  return error.issues.flatMap((issue): Issue[] => {
    const path = clippedPath(issue.path.map((key) => (typeof key === 'number' ? key : String(key))));
    if (issue.code !== 'unrecognized_keys') return [{ code: issue.code, path, message: clipped(messageOf(issue)) }];
    return issue.keys.map((key) => ({ code: issue.code, path: [...path, clipped(key)], message: clipped(`Unrecognized key: "${key}"`) }));
  });
}

/** JSON has no undefined: zod's "expected object, received undefined" is a field left out, and says so. */
function messageOf(issue: z.core.$ZodIssue): string {
  return issue.code === 'invalid_type' && issue.message.endsWith(', received undefined') ? `missing: a required field (expected ${issue.expected})` : issue.message;
}

/** An issue that zod cannot see: a broken reference, a duplicate, a repeated parameter. */
export function customIssue(path: Issue['path'], message: string): Issue {
  return { code: 'custom', path: clippedPath(path), message: clipped(message) };
}

function clippedPath(path: Issue['path']): Issue['path'] {
  return path.map((key) => (typeof key === 'number' ? key : clipped(key)));
}

/** Characters of a key or message an issue repeats from each end; what lies between is counted, not echoed. */
const KEPT_HEAD = 150;
const KEPT_TAIL = 50;

/**
 * A dataset's keys and values reach issues, and from there the CLI, the logs and every `/readyz`
 * answer: a 5 MB unknown key made `/readyz` 10 MB. The middle goes, so a message still ends with
 * what it says about the value; cuts fall between code points, never inside a surrogate pair.
 */
function clipped(text: string): string {
  if (text.length <= KEPT_HEAD + KEPT_TAIL + 40) return text;
  const head = /[\uD800-\uDBFF]/.test(text[KEPT_HEAD - 1]!) ? KEPT_HEAD - 1 : KEPT_HEAD;
  const tail = /[\uDC00-\uDFFF]/.test(text[text.length - KEPT_TAIL]!) ? text.length - KEPT_TAIL + 1 : text.length - KEPT_TAIL;
  return `${text.slice(0, head)}…(${tail - head} characters left out)…${text.slice(tail)}`;
}

/** `text` with each character the global `pattern` matches written as a `\uXXXX` escape, as JSON writes one. */
export function withUnicodeEscapes(text: string, pattern: RegExp): string {
  return text.replace(pattern, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** A key written bare in a path: no white space, controls, format characters (bidi overrides), dots, brackets or quotes. */
const BARE_KEY = /^[^\s\p{Cc}\p{Cf}.[\]"\\]+$/u;
/** What a quoted key escapes beyond JSON's own escapes: DEL, the C1 controls (a terminal reads U+009B as CSI) and format characters. */
const ESCAPED_IN_KEY = /[\u007F-\u009F\p{Cf}]/gu;

/**
 * An issue's path as people write it, `reviews[0].rating`; `(root)` for the document itself. One spelling in every
 * log and CLI. A key that is not plain is quoted and escaped, `reviews[0]["x\u001b[2J"]`: keys come from the
 * dataset, and one holding a terminal's escape sequence cleared the screen of whoever ran the check.
 */
export function formatIssuePath(path: readonly (string | number)[]): string {
  if (path.length === 0) return '(root)';
  return path
    .map((key, i) => {
      if (typeof key === 'number') return `[${key}]`;
      if (!BARE_KEY.test(key)) return `[${withUnicodeEscapes(JSON.stringify(key), ESCAPED_IN_KEY)}]`;
      return i === 0 ? key : `.${key}`;
    })
    .join('');
}
