import { and, asc, eq, gt, or, sql } from 'drizzle-orm';
import { arrayLiteral, queryRows } from '@repo/db';
import type { DbTx } from '../../db/index.js';
import { domainEvents, outboxCursors, type DomainEvent } from '../../db/schema/index.js';

export type NewDomainEvent = Pick<DomainEvent, 'type' | 'subjectType' | 'subjectId' | 'actorId' | 'payload'>;

export interface OutboxPosition {
  txId: number;
  eventId: number;
}

/** Rows per statement: a statement carries at most 65 535 parameters, and an event takes five. */
const EVENTS_PER_INSERT = 10_000;

/** Appends events with one multi-row insert (per ten thousand). */
export async function insertEvents(db: DbTx, events: NewDomainEvent[]): Promise<void> {
  for (let i = 0; i < events.length; i += EVENTS_PER_INSERT) {
    await db.insert(domainEvents).values(events.slice(i, i + EVENTS_PER_INSERT));
  }
}

/**
 * The next events after `after`, in commit order, that no running transaction can still precede:
 * only transactions older than this snapshot's oldest running one are read, so a slow transaction's
 * event is never behind a cursor that has already moved on.
 */
export async function eventsAfter(db: DbTx, after: OutboxPosition, limit: number): Promise<DomainEvent[]> {
  return db
    .select()
    .from(domainEvents)
    .where(
      and(
        sql`${domainEvents.txId} < pg_snapshot_xmin(pg_current_snapshot())::text::bigint`,
        or(gt(domainEvents.txId, after.txId), and(eq(domainEvents.txId, after.txId), gt(domainEvents.id, after.eventId))),
      ),
    )
    .orderBy(asc(domainEvents.txId), asc(domainEvents.id))
    .limit(limit);
}

/**
 * A consumer's cursor, locked for the caller's transaction; null when another instance holds it
 * (that instance is delivering the same events now).
 */
export async function claimCursor(tx: DbTx, consumer: string): Promise<OutboxPosition | null> {
  await tx.insert(outboxCursors).values({ consumer }).onConflictDoNothing();
  const [row] = await tx
    .select({ txId: outboxCursors.lastTxId, eventId: outboxCursors.lastEventId })
    .from(outboxCursors)
    .where(eq(outboxCursors.consumer, consumer))
    .for('update', { skipLocked: true });
  return row ?? null;
}

export async function moveCursor(tx: DbTx, consumer: string, to: OutboxPosition): Promise<void> {
  await tx
    .update(outboxCursors)
    .set({ lastTxId: to.txId, lastEventId: to.eventId, updatedAt: sql`now()` })
    .where(eq(outboxCursors.consumer, consumer));
}

export async function eventsOf(db: DbTx, subjectType: string, subjectId: number): Promise<DomainEvent[]> {
  return db
    .select()
    .from(domainEvents)
    .where(and(eq(domainEvents.subjectType, subjectType), eq(domainEvents.subjectId, subjectId)))
    .orderBy(asc(domainEvents.id));
}

/**
 * For each consumer, whether an event waits past its cursor (a consumer without a cursor yet starts
 * at the beginning) and how long the oldest such event has waited, in seconds (0 when none): the
 * outbox lag, and what the dispatcher checks before it opens a transaction. One index probe per
 * consumer (domain_events_order_idx), whatever the outbox holds.
 */
export async function undeliveredAge(db: DbTx, consumers: string[]): Promise<{ consumer: string; behind: boolean; seconds: number }[]> {
  if (consumers.length === 0) return [];
  return queryRows<{ consumer: string; behind: boolean; seconds: number }>(
    db,
    sql`select c.consumer, e.occurred_at is not null as behind,
               coalesce(extract(epoch from now() - e.occurred_at), 0)::float8 as seconds
        from unnest(${arrayLiteral(consumers)}::text[]) as c(consumer)
        left join ${outboxCursors} oc on oc.consumer = c.consumer
        left join lateral (
          select d.occurred_at from ${domainEvents} d
          where (d.tx_id, d.id) > (coalesce(oc.last_tx_id, 0), coalesce(oc.last_event_id, 0))
          order by d.tx_id, d.id
          limit 1
        ) e on true`,
  );
}
