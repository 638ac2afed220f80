import { sqlState } from '@repo/db';

/** A unique constraint refused the row (a concurrent duplicate that a prior check could not see). */
export function isUniqueViolation(error: unknown): boolean {
  return sqlState(error) === '23505';
}

/**
 * An exclusion constraint refused the row: for appointments, another active appointment of the
 * same prestataire already holds part of that time (a booking race settled by the database).
 */
export function isExclusionViolation(error: unknown): boolean {
  return sqlState(error) === '23P01';
}
