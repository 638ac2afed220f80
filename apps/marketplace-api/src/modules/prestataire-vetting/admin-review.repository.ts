import { and, asc, count, eq, exists, inArray, isNull, sql } from 'drizzle-orm';
import { QueryBuilder } from 'drizzle-orm/pg-core';
import type { DbTx } from '../../db/index.js';
import { prestataireProfiles, users, VALIDATION_STATUSES, type ValidationStatus } from '../../db/schema/index.js';
import { defineStateMachine } from '../../lib/transitions.js';

const livePrestataire = (userId: number) => and(eq(users.id, userId), eq(users.role, 'prestataire'), isNull(users.deletedAt));

const qb = new QueryBuilder();

/**
 * A prestataire's validation (DESIGN.md §6), moved by `transition`: the profile keyed by its user
 * id; a profile whose account is no live prestataire (deleted) is not found.
 */
export const validationMachine = defineStateMachine({
  table: prestataireProfiles,
  key: prestataireProfiles.userId,
  state: prestataireProfiles.validationStatus,
  states: VALIDATION_STATUSES,
  scope: () =>
    exists(
      qb
        .select({ id: users.id })
        .from(users)
        .where(and(eq(users.id, prestataireProfiles.userId), eq(users.role, 'prestataire'), isNull(users.deletedAt))),
    ),
  label: 'Prestataire',
  noun: 'prestataire',
  stateName: 'validation status',
  subjectType: 'user',
  audit: (p) => ({ validation_status: p.validationStatus, validation_note: p.validationNote }),
  stamp: () => ({ updatedAt: sql`now()` }),
});

/** A live prestataire account and its profile; any other id (client, admin, deleted) is not found. */
export async function findPrestataire(db: DbTx, userId: number) {
  const [row] = await db
    .select({ user: users, profile: prestataireProfiles })
    .from(users)
    .innerJoin(prestataireProfiles, eq(prestataireProfiles.userId, users.id))
    .where(livePrestataire(userId))
    .limit(1);
  return row;
}

/** Prestataires waiting on an admin, longest-waiting first. */
export async function listQueue(db: DbTx, statuses: ValidationStatus[], limit: number, offset: number) {
  const where = and(eq(users.role, 'prestataire'), isNull(users.deletedAt), inArray(prestataireProfiles.validationStatus, statuses));
  const [rows, [total]] = await Promise.all([
    db
      .select({ user: users, profile: prestataireProfiles })
      .from(prestataireProfiles)
      .innerJoin(users, eq(users.id, prestataireProfiles.userId))
      .where(where)
      .orderBy(asc(users.createdAt), asc(users.id))
      .limit(limit)
      .offset(offset),
    db
      .select({ n: count() })
      .from(prestataireProfiles)
      .innerJoin(users, eq(users.id, prestataireProfiles.userId))
      .where(where),
  ]);
  return { rows, total: total?.n ?? 0 };
}
