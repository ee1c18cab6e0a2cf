const LOWER_CASE_BIT = 0x20;

/**
 * Whether a raw header field name is `lowerCaseName` (letters and `-`) in any letter case, compared
 * without making a lower-cased copy of every name a request sends. Setting bit 0x20 folds a letter's
 * case; no other token character becomes a letter or `-` by it.
 */
export function isFieldName(name: string, lowerCaseName: string): boolean {
  if (name.length !== lowerCaseName.length) return false;
  for (let i = 0; i < name.length; i++) {
    if ((name.charCodeAt(i) | LOWER_CASE_BIT) !== lowerCaseName.charCodeAt(i)) return false;
  }
  return true;
}
