import { withTransaction } from '@repo/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DomainEvent } from '../src/db/schema/index.js';
import { systemActor, type Actor } from '../src/lib/context.js';
import { createOutbox, createOutboxDispatcher, type OutboxConsumer, type OutboxDispatcher } from '../src/modules/outbox/outbox.js';
import { buildTestApp, unique, type TestApp } from './helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp();
});
afterAll(async () => {
  await t.close();
});

/** A consumer that keeps what it is given, for one subject type of its own so tests do not see each other. */
function collector(name: string, subjectType: string, fail?: () => boolean) {
  const seen: DomainEvent[] = [];
  const consumer: OutboxConsumer = {
    name,
    accepts: (e) => e.subjectType === subjectType,
    async handle(events) {
      if (fail?.()) throw new Error('the consumer is down');
      seen.push(...events);
    },
  };
  return { consumer, seen };
}

/**
 * Drains until `done` holds: on a shared PostgreSQL server an event is readable only once every
 * older transaction of the cluster has ended (other test files' included), so one drain may not
 * reach it yet.
 */
async function drainUntil(dispatchers: Pick<OutboxDispatcher, 'drain'>[], done: () => boolean, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error('the outbox did not deliver in time');
    for (const d of dispatchers) await d.drain();
    if (!done()) await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

const actor: Actor = { kind: 'user', userId: 1, role: 'admin', sessionId: 's', requestId: 'r', ip: '192.0.2.1' };

describe('outbox', () => {
  it('delivers published events to each consumer once, in order, and only the types it accepts', async () => {
    const db = t.database.db;
    const subject = `offer-${unique()}`;
    const outbox = createOutbox({ db });
    await outbox.publish(actor, [
      { type: 'offer.created', subject: { type: subject, id: 1 }, payload: { n: 1 } },
      { type: 'offer.accepted', subject: { type: subject, id: 1 }, payload: { n: 2 } },
    ]);
    await outbox.publish(systemActor, { type: 'offer.expired', subject: { type: subject, id: 2 }, payload: { n: 3 } });
    await outbox.publish(actor, { type: 'other', subject: { type: `${subject}-other`, id: 1 }, payload: {} });

    const a = collector(`a-${subject}`, subject);
    const b = collector(`b-${subject}`, subject);
    const dispatcher = createOutboxDispatcher({ db, consumers: [a.consumer, b.consumer], batchSize: 2 });
    await drainUntil([dispatcher], () => a.seen.length >= 3 && b.seen.length >= 3);
    for (const c of [a, b]) {
      expect(c.seen.map((e) => e.payload.n)).toEqual([1, 2, 3]);
      expect(c.seen.map((e) => e.actorId)).toEqual([1, 1, null]);
    }
    await outbox.publish(actor, { type: 'offer.refused', subject: { type: subject, id: 3 }, payload: { n: 4 } });
    await drainUntil([dispatcher], () => a.seen.length >= 4);
    expect(a.seen.map((e) => e.payload.n)).toEqual([1, 2, 3, 4]);
  });

  it('opens no transaction for a consumer that is up to date: one read finds who is behind', async () => {
    const db = t.database.db;
    const subject = `idle-${unique()}`;
    const outbox = createOutbox({ db });
    // The dispatcher's database, counting the transactions it opens.
    let transactions = 0;
    const counted = new Proxy(db, {
      get(target, property, receiver) {
        if (property === 'transaction') transactions += 1;
        return Reflect.get(target, property, receiver) as unknown;
      },
    });
    const c = collector(`idle-${subject}`, subject);
    const dispatcher = createOutboxDispatcher({ db: counted, consumers: [c.consumer] });
    await outbox.publish(actor, { type: 'request.created', subject: { type: subject, id: 1 }, payload: { n: 1 } });
    await drainUntil([dispatcher], () => c.seen.length >= 1);
    expect(await dispatcher.lag()).toEqual([{ consumer: c.consumer.name, seconds: 0 }]);
    transactions = 0;
    expect(await dispatcher.drain()).toEqual({ [c.consumer.name]: 0 });
    expect(transactions).toBe(0);
    // Behind again: it delivers.
    await outbox.publish(actor, { type: 'request.updated', subject: { type: subject, id: 1 }, payload: { n: 2 } });
    await drainUntil([dispatcher], () => c.seen.length >= 2);
    expect(transactions).toBeGreaterThan(0);
    expect(c.seen.map((e) => e.payload.n)).toEqual([1, 2]);
  });

  it('delivers again a batch its consumer failed on, and never an event whose transaction rolled back', async () => {
    const db = t.database.db;
    const subject = `appointment-${unique()}`;
    const outbox = createOutbox({ db });
    let down = true;
    const c = collector(`c-${subject}`, subject, () => down);
    const dispatcher = createOutboxDispatcher({ db, consumers: [c.consumer] });
    await outbox.publish(actor, { type: 'appointment.started', subject: { type: subject, id: 1 }, payload: { n: 1 } });
    await expect(
      withTransaction(db, async (tx) => {
        await outbox.publish(actor, { type: 'appointment.ended', subject: { type: subject, id: 1 }, payload: { n: 2 } }, tx);
        throw new Error('the move failed');
      }),
    ).rejects.toThrow('the move failed');
    // The consumer fails as soon as the event is readable (on a shared server, once older transactions end).
    let failures = 0;
    const attempt = {
      async drain() {
        try {
          return await dispatcher.drain();
        } catch (error) {
          if ((error as Error).message !== 'the consumer is down') throw error;
          failures += 1;
          return {};
        }
      },
    };
    await drainUntil([attempt], () => failures > 0);
    expect(c.seen).toEqual([]);
    down = false;
    await drainUntil([dispatcher], () => c.seen.length >= 1);
    expect(c.seen.map((e) => e.payload.n)).toEqual([1]);
  });

  it.skipIf(!process.env.TEST_DATABASE_URL)('holds back an event whose transaction is still running, and delivers it once it commits', async () => {
    const db = t.database.db;
    const subject = `request-${unique()}`;
    const outbox = createOutbox({ db });
    const c = collector(`d-${subject}`, subject);
    const dispatcher = createOutboxDispatcher({ db, consumers: [c.consumer] });
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let published!: () => void;
    const isPublished = new Promise<void>((resolve) => (published = resolve));
    // The slow transaction takes its event id first; a quick one commits after it.
    const slow = withTransaction(db, async (tx) => {
      await outbox.publish(actor, { type: 'request.slow', subject: { type: subject, id: 1 }, payload: { n: 1 } }, tx);
      published();
      await held;
    });
    await isPublished;
    await outbox.publish(actor, { type: 'request.quick', subject: { type: subject, id: 2 }, payload: { n: 2 } });
    await dispatcher.drain();
    expect(c.seen).toEqual([]);
    release();
    await slow;
    await drainUntil([dispatcher], () => c.seen.length >= 2);
    expect(c.seen.map((e) => e.payload.n)).toEqual([1, 2]);
  });

  it.skipIf(!process.env.TEST_DATABASE_URL)('with two instances draining at once, every event reaches the consumer exactly once', async () => {
    const db = t.database.db;
    const subject = `payment-${unique()}`;
    const outbox = createOutbox({ db });
    for (let i = 0; i < 50; i++) await outbox.publish(actor, { type: 'payment.tick', subject: { type: subject, id: i }, payload: { n: i } });
    const seen: number[] = [];
    const consumer: OutboxConsumer = {
      name: `e-${subject}`,
      accepts: (e) => e.subjectType === subject,
      async handle(events) {
        seen.push(...events.map((e) => e.payload.n as number));
      },
    };
    const one = createOutboxDispatcher({ db, consumers: [consumer], batchSize: 5 });
    const two = createOutboxDispatcher({ db, consumers: [consumer], batchSize: 5 });
    await Promise.all([one.drain(), two.drain(), one.drain()]);
    await drainUntil([one, two], () => seen.length >= 50);
    expect(seen).toEqual(Array.from({ length: 50 }, (_, i) => i));
  });
});
