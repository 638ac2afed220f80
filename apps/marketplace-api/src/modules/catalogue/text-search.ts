import { escapeLike } from '@repo/db';
import { sql, type SQL, type SQLWrapper } from 'drizzle-orm';

/**
 * Text without accents or ligatures (PostgreSQL's unaccent: é → e, ç → c, œ → oe), hyphens,
 * apostrophes and runs of spaces as one space, lower case. unaccent runs before lower(), which
 * leaves non-ASCII letters alone under the C locale (PGlite's).
 */
function foldSql(expression: SQLWrapper | SQL): SQL {
  return sql`lower(regexp_replace(unaccent(${expression}), '[-''’[:space:]]+', ' ', 'g'))`;
}

/**
 * The search term folded by the same expression as the column, so both sides always agree. It is
 * escaped for LIKE first: folding neither makes nor removes `%`, `_` or `\`.
 */
function foldedPattern(text: string, prefix: string, suffix: string): SQL {
  return sql`${prefix} || btrim(${foldSql(sql`${escapeLike(text)}::text`)}) || ${suffix}`;
}

/** `expression` contains `text`, ignoring case, accents, hyphens and apostrophes. */
export function foldedContains(expression: SQLWrapper | SQL, text: string): SQL {
  return sql`${foldSql(expression)} like ${foldedPattern(text, '%', '%')}`;
}

/** `expression` starts with `text`, ignoring case, accents, hyphens and apostrophes. */
export function foldedStartsWith(expression: SQLWrapper | SQL, text: string): SQL {
  return sql`${foldSql(expression)} like ${foldedPattern(text, '', '%')}`;
}
