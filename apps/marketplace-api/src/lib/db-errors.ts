/** The SQLSTATE of a database error, looking through the query builder's wrapper. */
export function sqlState(error: unknown): string | undefined {
  for (let e: unknown = error, depth = 0; e && typeof e === 'object' && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code;
  }
  return undefined;
}

/** A unique constraint refused the row (a concurrent duplicate that a prior check could not see). */
export function isUniqueViolation(error: unknown): boolean {
  return sqlState(error) === '23505';
}
