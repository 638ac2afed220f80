import { withTransaction } from '@repo/db';
import type { DbTx } from '../../db/index.js';
import type { DomainEvent } from '../../db/schema/index.js';
import type { Caller } from '../../lib/context.js';
import { claimCursor, eventsAfter, insertEvents, moveCursor, undeliveredAge } from './outbox.repository.js';

/** What happened to which subject, in the words of the state machine that moved it. */
export interface DomainEventInput {
  /** Dotted: `offer.accepted`, `appointment.cancelled`. */
  type: string;
  subject: { type: string; id: number };
  payload: Record<string, unknown>;
}

/**
 * The one writer of the outbox, built once with the app. Given the mover's transaction, the event
 * commits or rolls back with the move it records.
 */
export function createOutbox(deps: { db: DbTx }) {
  return {
    async publish(actor: Caller, events: DomainEventInput | DomainEventInput[], tx?: DbTx): Promise<void> {
      const list = Array.isArray(events) ? events : [events];
      await insertEvents(
        tx ?? deps.db,
        list.map((e) => ({
          type: e.type,
          subjectType: e.subject.type,
          subjectId: e.subject.id,
          actorId: actor.kind === 'user' ? actor.userId : null,
          payload: e.payload,
        })),
      );
    },
  };
}

export type Outbox = ReturnType<typeof createOutbox>;

/**
 * A reader of the outbox (notifications, real-time, push…): it gets the events in commit order, in
 * batches, inside the transaction that moves its cursor, so a batch it fails on is delivered again.
 * Adding one is registering it with the dispatcher; the code that publishes never changes.
 */
export interface OutboxConsumer {
  name: string;
  /** Only these event types reach `handle` (all when absent); the cursor moves past the others. */
  accepts?: (event: DomainEvent) => boolean;
  handle(events: DomainEvent[], tx: DbTx): Promise<void>;
}

/**
 * Delivers the outbox to its consumers. Each consumer's cursor row is locked with SKIP LOCKED, so
 * with several instances running, each batch goes to one of them; the others skip it this tick.
 */
export function createOutboxDispatcher(deps: { db: DbTx; consumers: OutboxConsumer[]; batchSize?: number }) {
  const batchSize = deps.batchSize ?? 200;
  const names = deps.consumers.map((consumer) => consumer.name);

  async function deliverBatch(consumer: OutboxConsumer): Promise<number> {
    return withTransaction(deps.db, async (tx) => {
      const cursor = await claimCursor(tx, consumer.name);
      if (!cursor) return 0;
      const events = await eventsAfter(tx, cursor, batchSize);
      const last = events.at(-1);
      if (!last) return 0;
      const wanted = consumer.accepts ? events.filter(consumer.accepts) : events;
      if (wanted.length > 0) await consumer.handle(wanted, tx);
      await moveCursor(tx, consumer.name, { txId: last.txId, eventId: last.id });
      return events.length;
    });
  }

  return {
    /**
     * Delivers everything readable now; answers the number of events each consumer went past. One
     * query first finds the consumers with an event past their cursor: an idle tick opens no
     * transaction and locks no cursor.
     */
    async drain(): Promise<Record<string, number>> {
      const moved: Record<string, number> = {};
      const behind = new Set((await undeliveredAge(deps.db, names)).filter((c) => c.behind).map((c) => c.consumer));
      for (const consumer of deps.consumers) {
        let total = 0;
        while (behind.has(consumer.name)) {
          const n = await deliverBatch(consumer);
          total += n;
          if (n < batchSize) break;
        }
        moved[consumer.name] = total;
      }
      return moved;
    },

    /** Each consumer's lag: the age in seconds of the oldest event it has not gone past yet (0: up to date). */
    lag: async () => (await undeliveredAge(deps.db, names)).map(({ consumer, seconds }) => ({ consumer, seconds })),
  };
}

export type OutboxDispatcher = ReturnType<typeof createOutboxDispatcher>;
