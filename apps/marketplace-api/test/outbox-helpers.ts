import { count, inArray, sql } from 'drizzle-orm';
import { domainEvents, outboxCursors } from '../src/db/schema/index.js';
import type { TestApp } from './helpers.js';

/**
 * Drains the outbox until the named consumers have gone past every event, including those they
 * published themselves. One drain is not always enough on a shared PostgreSQL server: an event is
 * read only once every transaction older than it has ended, and the server's other databases'
 * transactions count too.
 */
export async function deliverAll(t: Pick<TestApp, 'app'> & { database: Pick<TestApp['database'], 'db'> }, consumers: string[], timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await t.app.outboxDispatch.drain();
    const [pending] = await t.database.db
      .select({ n: count() })
      .from(domainEvents)
      .innerJoin(
        outboxCursors,
        sql`(${domainEvents.txId}, ${domainEvents.id}) > (${outboxCursors.lastTxId}, ${outboxCursors.lastEventId})`,
      )
      .where(inArray(outboxCursors.consumer, consumers));
    if ((pending?.n ?? 0) === 0) return;
    if (Date.now() > deadline) throw new Error(`outbox: ${pending?.n} event(s) still undelivered to ${consumers.join(', ')}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
