/** Letters with no decomposition into a base letter and a mark, and the plain letters that spell them. */
const SPELLED: Record<string, string> = { œ: 'oe', Œ: 'OE', æ: 'ae', Æ: 'AE', ß: 'ss', ẞ: 'SS', ø: 'o', Ø: 'O', đ: 'd', Đ: 'D', ł: 'l', Ł: 'L' };
const SPELLED_LETTERS = new RegExp(`[${Object.keys(SPELLED).join('')}]`, 'g');

/**
 * Text without accents, for searching and comparing: "Mégane" → "Megane", "cœur" → "coeur",
 * "Straße" → "Strasse", "Øst" → "Ost". Marks go after a compatibility decomposition (NFKD, so "ﬁ" is
 * "fi" and "²" is "2"), and the letters that have none but a plain spelling (œ æ ß ø đ ł) are spelled
 * out. Case, spaces, punctuation and apostrophes stay as they are: each caller lower-cases and splits
 * as it needs.
 */
export function foldAccents(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .replace(SPELLED_LETTERS, (letter) => SPELLED[letter] ?? letter);
}
