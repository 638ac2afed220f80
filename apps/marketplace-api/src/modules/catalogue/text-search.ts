import { escapeLike } from '@repo/db';
import { sql, type SQL, type SQLWrapper } from 'drizzle-orm';

// Folding is done with translate(), which every PostgreSQL has (unaccent is an extension that
// neither PGlite nor managed servers can be assumed to load), and before lower(), which leaves
// non-ASCII letters alone under the C locale.
const ACCENTED = 'ÀÁÂÃÄÅàáâãäåÇçÈÉÊËèéêëÌÍÎÏìíîïÑñÒÓÔÕÖòóôõöÙÚÛÜùúûüÝŸýÿ';
const SEPARATORS = "-'’";
const FROM = ACCENTED + SEPARATORS;
const TO = [...ACCENTED].map((c) => c.normalize('NFD').replace(/\p{Diacritic}/gu, '')).join('') + ' '.repeat(SEPARATORS.length);

/** Text as the folded SQL expression compares it: no accents or ligatures, hyphens and apostrophes as spaces, lower case. */
export function foldText(text: string): string {
  return text
    .normalize('NFD')
    .replace(/\p{Diacritic}/gu, '')
    .replace(/œ/g, 'oe')
    .replace(/Œ/g, 'OE')
    .replace(/æ/g, 'ae')
    .replace(/Æ/g, 'AE')
    .replace(/[-'’\s]+/g, ' ')
    .toLowerCase()
    .trim();
}

/** The SQL counterpart of `foldText` over a column or expression. */
export function foldSql(expression: SQLWrapper | SQL): SQL {
  return sql`lower(translate(replace(replace(replace(replace(${expression}, 'œ', 'oe'), 'Œ', 'OE'), 'æ', 'ae'), 'Æ', 'AE'), ${FROM}, ${TO}))`;
}

/** `expression` contains `text`, ignoring case, accents, hyphens and apostrophes. */
export function foldedContains(expression: SQLWrapper | SQL, text: string): SQL {
  return sql`${foldSql(expression)} like ${`%${escapeLike(foldText(text))}%`}`;
}

/** `expression` starts with `text`, ignoring case, accents, hyphens and apostrophes. */
export function foldedStartsWith(expression: SQLWrapper | SQL, text: string): SQL {
  return sql`${foldSql(expression)} like ${`${escapeLike(foldText(text))}%`}`;
}
