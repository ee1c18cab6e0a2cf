/**
 * Serializes a JSON value as a stream of chunks, one record per line: the root and its members are
 * expanded, and so is any deeper collection whose members are all objects or arrays (reviews,
 * per_review, faq, services...); everything else is compact. A large dataset then reads and diffs
 * as one review per line, and is never materialized as a single string.
 */
export function* formatJson(value: unknown, depth = 0): Generator<string> {
  if (value === null || typeof value !== 'object') {
    yield JSON.stringify(value);
    return;
  }
  const entries: [string | null, unknown][] = Array.isArray(value) ? value.map((item) => [null, item]) : Object.entries(value);
  const isRecordCollection = entries.length > 0 && entries.every(([, item]) => item !== null && typeof item === 'object');
  if (depth >= 2 && !isRecordCollection) {
    yield JSON.stringify(value);
    return;
  }
  const [open, close] = Array.isArray(value) ? ['[', ']'] : ['{', '}'];
  if (entries.length === 0) {
    yield open + close;
    return;
  }
  const indent = ' '.repeat(depth);
  yield `${open}\n`;
  for (let i = 0; i < entries.length; i++) {
    const [key, item] = entries[i] as [string | null, unknown];
    yield key === null ? `${indent} ` : `${indent} ${JSON.stringify(key)}:`;
    yield* formatJson(item, depth + 1);
    yield i < entries.length - 1 ? ',\n' : '\n';
  }
  yield indent + close;
}
