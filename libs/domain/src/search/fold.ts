/**
 * How a consumer's text is compared with the dataset's (search `query`, staff and service names, aspects,
 * FAQ entries): letter case is ignored, canonically equivalent spellings are one text (NFC: "e" with a
 * combining acute is "é", as a keyboard or a macOS file name may send it), and a final sigma is a sigma
 * (toLowerCase() writes a capital Σ ending a word as ς, so the query "ΟΔΟΣ" did not find "ΟΔΟΣΤΡΩΣΗ").
 */
export function foldForSearch(text: string): string {
  const folded = text.toLowerCase().normalize('NFC');
  return folded.includes('ς') ? folded.replaceAll('ς', 'σ') : folded;
}
