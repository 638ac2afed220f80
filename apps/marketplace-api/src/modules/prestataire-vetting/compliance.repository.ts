import { and, asc, count, eq, gt, inArray, isNotNull, isNull, lte, ne, notExists, or, sql } from 'drizzle-orm';
import { alias } from 'drizzle-orm/pg-core';
import type { DbTx } from '../../db/index.js';
import { documents, prestataireProfiles, users } from '../../db/schema/index.js';

const newer = alias(documents, 'newer');

/**
 * Documents of live validated or suspended prestataires that expire on or before `until` (past ones
 * included), soonest first. A document already replaced by one of the same type that runs longer
 * (or does not expire) is left out: the prestataire has done what was needed. `other` documents
 * are unrelated to each other, so none replaces another.
 */
export async function listExpiring(db: DbTx, today: string, until: string, limit: number, offset: number) {
  const where = and(
    inArray(prestataireProfiles.validationStatus, ['validated', 'suspended']),
    isNull(users.deletedAt),
    isNotNull(documents.expiresOn),
    lte(documents.expiresOn, until),
    notExists(
      db
        .select({ one: sql`1` })
        .from(newer)
        .where(
          and(
            eq(newer.userId, documents.userId),
            eq(newer.type, documents.type),
            ne(documents.type, 'other'),
            ne(newer.id, documents.id),
            or(isNull(newer.expiresOn), gt(newer.expiresOn, documents.expiresOn)),
          ),
        ),
    ),
  );
  const [rows, [total]] = await Promise.all([
    db
      .select({
        document: documents,
        businessName: prestataireProfiles.businessName,
        email: users.email,
        daysLeft: sql<number>`(${documents.expiresOn} - ${today}::date)`.mapWith(Number),
      })
      .from(documents)
      .innerJoin(prestataireProfiles, eq(prestataireProfiles.userId, documents.userId))
      .innerJoin(users, eq(users.id, documents.userId))
      .where(where)
      .orderBy(asc(documents.expiresOn), asc(documents.id))
      .limit(limit)
      .offset(offset),
    db
      .select({ n: count() })
      .from(documents)
      .innerJoin(prestataireProfiles, eq(prestataireProfiles.userId, documents.userId))
      .innerJoin(users, eq(users.id, documents.userId))
      .where(where),
  ]);
  return { rows, total: total?.n ?? 0 };
}
