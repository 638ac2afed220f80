import { sqlState } from '@repo/db';

/** A unique constraint refused the row (a concurrent duplicate that a prior check could not see). */
export function isUniqueViolation(error: unknown): boolean {
  return sqlState(error) === '23505';
}
