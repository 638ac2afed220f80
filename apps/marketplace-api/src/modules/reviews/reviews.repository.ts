import { aliasedTable, and, count, desc, eq, sql, type SQL } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import {
  appointments,
  prestataireProfiles,
  REVIEW_STATUSES,
  reviews,
  users,
  type NewReview,
  type Review,
  type ReviewStatus,
} from '../../db/schema/index.js';
import { defineStateMachine } from '../../lib/transitions.js';

/**
 * A review's moderation (DESIGN.md §6): `pending` → `approved` | `rejected`, `approved` → `hidden`,
 * by an administrator. The audit carries the parties, so the outbox's consumers know whom an event
 * concerns (the notification of a published review goes to the prestataire).
 */
export const reviewMachine = defineStateMachine({
  table: reviews,
  key: reviews.id,
  state: reviews.status,
  states: REVIEW_STATUSES,
  label: 'Review',
  noun: 'review',
  stateName: 'status',
  subjectType: 'review',
  audit: (r) => ({
    status: r.status,
    rating: r.rating,
    appointment_id: r.appointmentId,
    client_id: r.clientId,
    prestataire_id: r.prestataireId,
    rejection_reason: r.rejectionReason,
  }),
  stamp: () => ({ updatedAt: sql`now()` }),
});

const clientUser = aliasedTable(users, 'review_client');

/** A review with what is shown of its client (first name, last name for the initial) and its prestataire's business name. */
const view = {
  review: reviews,
  client: { id: clientUser.id, firstName: clientUser.firstName, lastName: clientUser.lastName },
  businessName: prestataireProfiles.businessName,
};

function selectView(db: DbTx) {
  return db
    .select(view)
    .from(reviews)
    .innerJoin(clientUser, eq(clientUser.id, reviews.clientId))
    .leftJoin(prestataireProfiles, eq(prestataireProfiles.userId, reviews.prestataireId));
}

export type ReviewView = NonNullable<Awaited<ReturnType<typeof findReview>>>;

export async function findReview(db: DbTx, id: number) {
  const [row] = await selectView(db).where(eq(reviews.id, id)).limit(1);
  return row;
}

/** The review's prestataire (it never changes), without a lock: the moderation locks the profile with it first. */
export async function prestataireOfReview(db: DbTx, id: number): Promise<number | undefined> {
  const [row] = await db.select({ prestataireId: reviews.prestataireId }).from(reviews).where(eq(reviews.id, id)).limit(1);
  return row?.prestataireId;
}

/** What a review is checked against: the appointment's parties and status. */
export async function findAppointmentForReview(db: DbTx, appointmentId: number) {
  const [row] = await db
    .select({ id: appointments.id, clientId: appointments.clientId, prestataireId: appointments.prestataireId, status: appointments.status })
    .from(appointments)
    .where(eq(appointments.id, appointmentId))
    .limit(1);
  return row;
}

export async function reviewOfAppointment(db: DbTx, appointmentId: number): Promise<Review | undefined> {
  const [row] = await db.select().from(reviews).where(eq(reviews.appointmentId, appointmentId)).limit(1);
  return row;
}

export async function insertReview(db: DbTx, values: NewReview): Promise<Review> {
  const [row] = await db.insert(reviews).values(values).returning();
  return row!;
}

export interface ReviewFilter {
  status?: ReviewStatus;
  rating?: number;
  prestataireId?: number;
}

/** The moderation queue: one page of reviews, newest first. */
export async function listReviews(db: DbTx, filter: ReviewFilter, limit: number, offset: number) {
  const where = and(
    filter.status ? eq(reviews.status, filter.status) : undefined,
    filter.rating !== undefined ? eq(reviews.rating, filter.rating) : undefined,
    filter.prestataireId !== undefined ? eq(reviews.prestataireId, filter.prestataireId) : undefined,
  );
  const [rows, [total]] = await Promise.all([
    selectView(db).where(where).orderBy(desc(reviews.createdAt), desc(reviews.id)).limit(limit).offset(offset),
    db.select({ n: count() }).from(reviews).where(where),
  ]);
  return { rows, total: total?.n ?? 0 };
}

const approvedOf = (prestataireId: number): SQL => and(eq(reviews.prestataireId, prestataireId), eq(reviews.status, 'approved'))!;

/** One page of a prestataire's approved reviews, newest first. */
export async function listApproved(db: DbTx, prestataireId: number, limit: number, offset: number) {
  const where = approvedOf(prestataireId);
  const [rows, [total]] = await Promise.all([
    selectView(db).where(where).orderBy(desc(reviews.createdAt), desc(reviews.id)).limit(limit).offset(offset),
    db.select({ n: count() }).from(reviews).where(where),
  ]);
  return { rows, total: total?.n ?? 0 };
}

/** How many approved reviews of a prestataire give each rating (only the ratings given appear). */
export async function approvedDistribution(db: DbTx, prestataireId: number) {
  return db.select({ rating: reviews.rating, n: count() }).from(reviews).where(approvedOf(prestataireId)).groupBy(reviews.rating);
}

/**
 * Locks the prestataire's profile row for the rest of the transaction. Every move that changes its
 * approved reviews takes this lock before recomputing, so the moves of one prestataire follow one
 * another: the recomputation of the second runs after the first has committed, and sees it.
 */
export async function lockProfile(tx: DbTx, prestataireId: number): Promise<boolean> {
  const [row] = await tx.select({ userId: prestataireProfiles.userId }).from(prestataireProfiles).where(eq(prestataireProfiles.userId, prestataireId)).for('update');
  return row !== undefined;
}

/**
 * Sets the profile's rating from its approved reviews, counted again rather than adjusted, so it
 * cannot drift. Run under `lockProfile` in a statement of its own: in READ COMMITTED that statement's
 * snapshot is taken after the lock was granted, so it includes every move committed before.
 */
export async function recomputeRating(tx: DbTx, prestataireId: number) {
  const approved = approvedOf(prestataireId);
  const [row] = await tx
    .update(prestataireProfiles)
    .set({
      ratingAverage: sql`(select avg(${reviews.rating})::real from ${reviews} where ${approved})`,
      ratingCount: sql`(select count(*)::int from ${reviews} where ${approved})`,
    })
    .where(eq(prestataireProfiles.userId, prestataireId))
    .returning({ ratingAverage: prestataireProfiles.ratingAverage, ratingCount: prestataireProfiles.ratingCount });
  return row;
}

/** The rating search sorts by, as kept on the profile. */
export async function ratingOf(db: DbTx, prestataireId: number) {
  const [row] = await db
    .select({ ratingAverage: prestataireProfiles.ratingAverage, ratingCount: prestataireProfiles.ratingCount })
    .from(prestataireProfiles)
    .where(eq(prestataireProfiles.userId, prestataireId))
    .limit(1);
  return row;
}
