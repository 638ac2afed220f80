import { and, eq, gt, lte, sql } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { tailTickets } from '../../db/schema/index.js';

/** Stores a ticket's hash, valid `ttlMs` from the database's clock (every instance reads the same one). */
export async function insertTicket(
  db: DbTx,
  values: { ticketHash: string; userId: number; sessionId: string; projectId: number },
  ttlMs: number,
) {
  const [row] = await db
    .insert(tailTickets)
    .values({ ...values, expiresAt: sql`now() + ${ttlMs}::integer * interval '1 millisecond'` })
    .returning({ expiresAt: tailTickets.expiresAt });
  if (!row) throw new Error('insert returned no tail ticket');
  return row;
}

/**
 * Takes a live ticket out in one statement, so that two upgrades racing with the same ticket
 * cannot both get it; an expired one is left for deleteExpiredTickets.
 */
export async function redeemTicket(db: DbTx, ticketHash: string) {
  const [row] = await db
    .delete(tailTickets)
    .where(and(eq(tailTickets.ticketHash, ticketHash), gt(tailTickets.expiresAt, sql`now()`)))
    .returning({ userId: tailTickets.userId, sessionId: tailTickets.sessionId, projectId: tailTickets.projectId });
  return row;
}

/** Tickets nobody redeemed in time: a few rows at most, found by the index on their expiry. */
export async function deleteExpiredTickets(db: DbTx) {
  await db.delete(tailTickets).where(lte(tailTickets.expiresAt, sql`now()`));
}
