import { queryRows, sql, sqlState } from '@repo/db';
import { eq } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { appointments, type Appointment } from '../../db/schema/index.js';

export async function findAppointment(db: DbTx, id: number): Promise<Appointment | undefined> {
  const [row] = await db.select().from(appointments).where(eq(appointments.id, id)).limit(1);
  return row;
}

/**
 * Whether the user is one of the two parties of the conversation (its client or its prestataire).
 * Until the conversations table exists, no one is.
 */
export async function isConversationParty(db: DbTx, userId: number, conversationId: number): Promise<boolean> {
  try {
    const rows = await queryRows<{ ok: boolean }>(
      db,
      sql`select true as ok from conversations where id = ${conversationId} and (client_id = ${userId} or prestataire_id = ${userId}) limit 1`,
    );
    return rows.length > 0;
  } catch (error) {
    // 42P01: undefined table.
    if (sqlState(error) === '42P01') return false;
    throw error;
  }
}
