import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { bigint, text, timestamp, type PgSchema } from 'drizzle-orm/pg-core';
import type { DatabaseHandle } from './handle.js';
import { queryRows } from './queries.js';
import type { DbOrTx } from './types.js';

/**
 * Payloads too big for a notification, kept long enough for every instance to read them back by id.
 * Each app that fans out includes this table in its schema (its migrations create it), in its own
 * PostgreSQL schema; the queries below name it unqualified and find it on the connection's search_path.
 */
export function fanoutPayloadsTable(schema: PgSchema) {
  return schema.table('fanout_payloads', {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    payload: text('payload').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  });
}

/** PostgreSQL refuses a NOTIFY payload of 8000 bytes or more; ours stay under this, with room for the envelope. */
export const NOTIFY_MAX_BYTES = 7900;

/** How long an overflow row is kept: far longer than any instance takes to read a notification. */
const OVERFLOW_KEEP_SECONDS = 300;

export interface FanoutOptions {
  /** The NOTIFY channel (a plain lower-case identifier), one per kind of traffic: `realtime`, `log_tail`. */
  channel: string;
  /**
   * How often an instance repeats which topics it has subscribers for (see `hasSubscribers`); an
   * instance that stops repeating is forgotten after three periods. Default 10 s.
   */
  interestMs?: number;
  /** A listener that threw, a payload that could not be read back: logged, never fatal. */
  onError?: (error: unknown) => void;
}

type Listener = (message: unknown) => void;

/** What travels on the channel: a message for a topic (inline or by overflow row), or interest. */
type Envelope =
  | { k: 'm'; t: string; m: unknown; o?: string }
  | { k: 'r'; id: number }
  | { k: 'i'; o: string; t: string[] }
  | { k: 'd'; o: string; t: string[] }
  | { k: 'h'; o: string };

/**
 * Delivers messages to the subscribers of a topic on every instance of an app, through PostgreSQL
 * LISTEN/NOTIFY: a publisher notifies the channel (inside its transaction when it gives one, so
 * the message leaves only if the transaction commits), and each instance, this one included, hands
 * what it hears to its own subscribers. A payload too big for a notification is written to
 * `fanout_payloads` and its id notified instead. On PGlite the same path runs within the process.
 *
 * Delivery is at most once: a notification sent while an instance's listening connection is down
 * is lost to it (postgres.js reconnects and listens again by itself); a live view reconnects.
 */
export function createFanout(database: Pick<DatabaseHandle<Record<string, unknown>>, 'db' | 'listen'>, options: FanoutOptions) {
  const { db } = database;
  const channel = options.channel;
  if (!/^[a-z_][a-z0-9_]*$/.test(channel)) throw new Error(`fan-out channel must be a plain identifier: ${channel}`);
  const interestMs = options.interestMs ?? 10_000;
  const onError = options.onError ?? (() => {});
  const origin = randomUUID();
  const local = new Map<string, Set<Listener>>();
  /** Topics other instances have subscribers for: topic → instance → when that stops counting. */
  const remote = new Map<string, Map<string, number>>();
  let stopListening: (() => Promise<void>) | undefined;
  let interestTimer: NodeJS.Timeout | undefined;
  let lastCleanup = 0;
  let closed = false;

  async function notify(envelope: Envelope, tx?: DbOrTx) {
    const text = JSON.stringify(envelope);
    const runner = tx ?? db;
    if (Buffer.byteLength(text) < NOTIFY_MAX_BYTES) {
      await runner.execute(sql`select pg_notify(${channel}, ${text})`);
      return;
    }
    const [row] = await queryRows<{ id: number | string }>(
      runner,
      sql`insert into fanout_payloads (payload) values (${text}) returning id`,
    );
    await runner.execute(sql`select pg_notify(${channel}, ${JSON.stringify({ k: 'r', id: Number(row?.id) } satisfies Envelope)})`);
    // Rows outlive their readers by minutes; one sweep a minute per instance keeps the table small.
    if (Date.now() - lastCleanup > 60_000) {
      lastCleanup = Date.now();
      await runner.execute(sql`delete from fanout_payloads where created_at < now() - make_interval(secs => ${OVERFLOW_KEEP_SECONDS})`);
    }
  }

  function deliver(topic: string, message: unknown) {
    const listeners = local.get(topic);
    if (!listeners) return;
    for (const listener of [...listeners]) {
      try {
        listener(message);
      } catch (error) {
        onError(error);
      }
    }
  }

  function heard(envelope: Envelope) {
    switch (envelope.k) {
      case 'm':
        // A message for the others only was delivered here by its publisher already.
        if (envelope.o === origin) return;
        return deliver(envelope.t, envelope.m);
      case 'r':
        // Committed before it was notified: the row is there to read.
        return void queryRows<{ payload: string }>(db, sql`select payload from fanout_payloads where id = ${envelope.id}`)
          .then(([row]) => {
            if (row) heard(JSON.parse(row.payload) as Envelope);
          })
          .catch(onError);
      case 'i':
      case 'd': {
        if (envelope.o === origin) return;
        const until = Date.now() + 3 * interestMs;
        for (const topic of envelope.t) {
          const instances = remote.get(topic) ?? new Map<string, number>();
          if (envelope.k === 'i') instances.set(envelope.o, until);
          else instances.delete(envelope.o);
          if (instances.size > 0) remote.set(topic, instances);
          else remote.delete(topic);
        }
        return;
      }
      case 'h':
        // A new instance asks who listens to what: answer at once rather than at the next period.
        if (envelope.o !== origin) announce();
        return;
    }
  }

  /** Repeats this instance's topics, a notification's worth at a time. */
  function announce() {
    const topics = [...local.keys()];
    for (let i = 0; i < topics.length; ) {
      const batch: string[] = [];
      let size = 0;
      while (i < topics.length && size + (topics[i] as string).length < NOTIFY_MAX_BYTES - 200) {
        size += (topics[i] as string).length + 3;
        batch.push(topics[i++] as string);
      }
      if (batch.length === 0) batch.push(topics[i++] as string);
      notify({ k: 'i', o: origin, t: batch }).catch(onError);
    }
  }

  return {
    /** Starts listening (idempotent in effect: call once, when the app is ready). */
    async start() {
      stopListening = await database.listen(
        channel,
        (payload) => {
          try {
            heard(JSON.parse(payload) as Envelope);
          } catch (error) {
            onError(error);
          }
        },
        // Each time the connection listens again, what other instances listen to is asked afresh.
        () => {
          if (!closed) notify({ k: 'h', o: origin }).catch(onError);
        },
      );
      interestTimer = setInterval(() => {
        if (local.size > 0) announce();
      }, interestMs);
      interestTimer.unref();
    },

    /**
     * Sends `message` to the topic's subscribers on every instance (when `tx` commits, if given).
     * `othersOnly`: every instance but this one, whose subscribers the caller serves itself.
     */
    publish(topic: string, message: unknown, opts: { tx?: DbOrTx; othersOnly?: boolean } = {}): Promise<void> {
      return notify({ k: 'm', t: topic, m: message, ...(opts.othersOnly ? { o: origin } : {}) }, opts.tx);
    },

    /** This instance's listener of a topic; answers the function that removes it. */
    subscribe(topic: string, listener: Listener): () => void {
      let listeners = local.get(topic);
      if (!listeners) {
        listeners = new Set();
        local.set(topic, listeners);
        if (stopListening) notify({ k: 'i', o: origin, t: [topic] }).catch(onError);
      }
      listeners.add(listener);
      return () => {
        const set = local.get(topic);
        if (!set?.delete(listener) || set.size > 0) return;
        local.delete(topic);
        if (stopListening && !closed) notify({ k: 'd', o: origin, t: [topic] }).catch(onError);
      };
    },

    /** Subscribers of the topic on this instance. */
    localCount(topic: string): number {
      return local.get(topic)?.size ?? 0;
    },

    /**
     * Whether any instance has a subscriber for the topic, as far as this one has heard: lets a
     * publisher skip building a message nobody would read.
     */
    hasSubscribers(topic: string, opts: { othersOnly?: boolean } = {}): boolean {
      if (!opts.othersOnly && local.has(topic)) return true;
      const instances = remote.get(topic);
      if (!instances) return false;
      const now = Date.now();
      for (const [instance, until] of instances) if (until < now) instances.delete(instance);
      if (instances.size === 0) remote.delete(topic);
      return instances.size > 0;
    },

    async close() {
      closed = true;
      clearInterval(interestTimer);
      const stop = stopListening;
      stopListening = undefined;
      // The app may have closed the database first; stopping then must not hold the shutdown.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        stop?.().catch(() => undefined),
        new Promise((resolve) => {
          timer = setTimeout(resolve, 1000);
          timer.unref();
        }),
      ]);
      clearTimeout(timer);
      local.clear();
    },
  };
}

export type Fanout = ReturnType<typeof createFanout>;
