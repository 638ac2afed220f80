import { and, asc, eq, ne, sql, type SQL } from 'drizzle-orm';
import type { DbTx } from '../../../db/index.js';
import { OFFER_STATUSES, offers, prestataireProfiles, serviceRequests, type Offer } from '../../../db/schema/index.js';
import { defineStateMachine } from '../../../lib/transitions.js';

/**
 * An offer's life (DESIGN.md §6): pending → accepted | refused | withdrawn | expired. Every move goes
 * through `transition`.
 */
export const offerMachine = defineStateMachine({
  table: offers,
  key: offers.id,
  state: offers.status,
  states: OFFER_STATUSES,
  label: 'Offer',
  noun: 'offer',
  stateName: 'status',
  subjectType: 'offer',
  audit: (o) => ({
    status: o.status,
    service_request_id: o.serviceRequestId,
    prestataire_id: o.prestataireId,
    amount_cents: o.amountCents,
    proposed_start_at: o.proposedStartAt.toISOString(),
    duration_minutes: o.durationMinutes,
  }),
  stamp: () => ({ updatedAt: sql`now()`, decidedAt: sql`now()` }),
});

/** An offer with its prestataire's public name and rating, as clients see it. */
const offerWithPrestataire = {
  offer: offers,
  businessName: prestataireProfiles.businessName,
  ratingAverage: prestataireProfiles.ratingAverage,
  ratingCount: prestataireProfiles.ratingCount,
};

export type OfferRow = { offer: Offer; businessName: string | null; ratingAverage: number | null; ratingCount: number | null };

/** A prestataire's own offers. */
export function offerOfPrestataire(prestataireId: number): SQL {
  return eq(offers.prestataireId, prestataireId);
}

export async function listOffersOf(db: DbTx, requestId: number, where?: SQL): Promise<OfferRow[]> {
  return db
    .select(offerWithPrestataire)
    .from(offers)
    .leftJoin(prestataireProfiles, eq(prestataireProfiles.userId, offers.prestataireId))
    .where(and(eq(offers.serviceRequestId, requestId), where))
    .orderBy(asc(offers.createdAt), asc(offers.id));
}

export async function findOfferRow(db: DbTx, id: number): Promise<OfferRow | undefined> {
  const [row] = await db
    .select(offerWithPrestataire)
    .from(offers)
    .leftJoin(prestataireProfiles, eq(prestataireProfiles.userId, offers.prestataireId))
    .where(eq(offers.id, id))
    .limit(1);
  return row;
}

/** An offer and the request it answers. */
export async function findOfferWithRequest(db: DbTx, id: number) {
  const [row] = await db
    .select({ offer: offers, request: serviceRequests })
    .from(offers)
    .innerJoin(serviceRequests, eq(serviceRequests.id, offers.serviceRequestId))
    .where(eq(offers.id, id))
    .limit(1);
  return row;
}

/** The offer, locked until the end of the transaction. */
export async function lockOffer(db: DbTx, id: number): Promise<Offer | undefined> {
  const [row] = await db.select().from(offers).where(eq(offers.id, id)).for('update');
  return row;
}

export async function insertOffer(db: DbTx, values: typeof offers.$inferInsert): Promise<Offer> {
  const [row] = await db.insert(offers).values(values).returning();
  return row!;
}

/** The prestataire's live (pending) offer on a request, if any. */
export async function findPendingOffer(db: DbTx, requestId: number, prestataireId: number) {
  const [row] = await db
    .select()
    .from(offers)
    .where(and(eq(offers.serviceRequestId, requestId), eq(offers.prestataireId, prestataireId), eq(offers.status, 'pending')))
    .limit(1);
  return row;
}

/** Changes a pending offer's terms; undefined when it is no longer pending. */
export async function updatePendingOffer(
  db: DbTx,
  id: number,
  changes: Pick<typeof offers.$inferInsert, 'amountCents' | 'proposedStartAt' | 'durationMinutes' | 'message' | 'validUntil'>,
) {
  const [row] = await db
    .update(offers)
    .set({ ...changes, updatedAt: sql`now()` })
    .where(and(eq(offers.id, id), eq(offers.status, 'pending')))
    .returning();
  return row;
}

/** The ids of a request's pending offers, but one (the accepted), to close them. */
export async function pendingOfferIds(db: DbTx, requestId: number, exceptId?: number) {
  const rows = await db
    .select({ id: offers.id })
    .from(offers)
    .where(and(eq(offers.serviceRequestId, requestId), eq(offers.status, 'pending'), exceptId ? ne(offers.id, exceptId) : undefined))
    .orderBy(asc(offers.id));
  return rows.map((r) => r.id);
}
