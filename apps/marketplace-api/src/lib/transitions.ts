import { withTransaction } from '@repo/db';
import { AppError } from '@repo/http';
import { and, eq, getTableColumns, inArray, type SQL } from 'drizzle-orm';
import type { PgColumn, PgTable, PgUpdateSetSource } from 'drizzle-orm/pg-core';
import type { DbTx } from '../db/index.js';
import type { Caller } from './context.js';

/**
 * Where a state machine lives (DESIGN.md §6): a table, the key a move names a row by, the state
 * column, and what the 404/409 messages and the activity log call things. Defined once per machine,
 * beside that machine's queries in its repository.
 */
export interface StateMachineSpec<T extends PgTable, S extends string> {
  table: T;
  /** The column the id of a move matches (the primary key, or `user_id` for a profile). */
  key: PgColumn;
  /** The state column; its values are `S`. */
  state: PgColumn;
  /** A further condition on the rows that take part (a deleted account's profile is not found). */
  scope?: () => SQL | undefined;
  /** The 404's subject ("Prestataire not found"). */
  label: string;
  /** What the 409 calls a row and its state: "Cannot validate a prestataire whose validation status is …". */
  noun: string;
  stateName: string;
  /** The activity log's subject type; its subject id is the move's id. */
  subjectType: string;
  /** What the log keeps of a row, before and after the move. */
  audit: (row: T['$inferSelect']) => Record<string, unknown>;
  /** Columns every move sets besides the state (`updated_at`). */
  stamp?: () => PgUpdateSetSource<T>;
  /** The type of the states, for inference only. */
  states: readonly S[];
}

export interface StateMachine<T extends PgTable, S extends string> extends StateMachineSpec<T, S> {
  /** The state column's property name in the table's rows. */
  stateKey: keyof T['$inferSelect'] & string;
  /** The key column's property name in the table's rows. */
  keyKey: keyof T['$inferSelect'] & string;
}

/** Checks a machine's definition once, at start-up: its key and state columns must belong to its table. */
export function defineStateMachine<T extends PgTable, S extends string>(spec: StateMachineSpec<T, S>): StateMachine<T, S> {
  const columns = Object.entries(getTableColumns(spec.table));
  const property = (column: PgColumn, what: string) => {
    const entry = columns.find(([, c]) => c === column);
    if (!entry) throw new Error(`state machine ${spec.noun}: the ${what} column is not a column of its table`);
    return entry[0] as keyof T['$inferSelect'] & string;
  };
  return { ...spec, stateKey: property(spec.state, 'state'), keyKey: property(spec.key, 'key') };
}

/** One entry of the activity log: what was done to which subject, its state before and after. */
export interface MoveEntry {
  action: string;
  subject: { type: string; id: number | null };
  details: { before?: Record<string, unknown> | null; after?: Record<string, unknown> | null };
}

/** What records who made a move: the activity log's recorder. */
export interface MoveRecorder {
  record(actor: Caller, action: string, subject: MoveEntry['subject'], details: MoveEntry['details'], tx?: DbTx): Promise<unknown>;
  /** Several entries of one actor in one statement (a bulk move). */
  recordMany(actor: Caller, entries: readonly MoveEntry[], tx?: DbTx): Promise<unknown>;
}

/** A domain event: what happened to which subject, for the consumers that react to it. */
export interface MoveEvent {
  type: string;
  subject: { type: string; id: number };
  payload: Record<string, unknown>;
}

/** What publishes a move for the consumers that react to it: the outbox (a list in one statement). */
export interface MovePublisher {
  publish(actor: Caller, events: MoveEvent | MoveEvent[], tx?: DbTx): Promise<void>;
}

/**
 * What every move is recorded by: the activity log (who did it), the outbox (what consumers react
 * to). Declared here by shape, so the state machines sit below the modules that record and publish.
 */
export interface TransitionDeps {
  recorder: MoveRecorder;
  outbox: MovePublisher;
  actor: Caller;
}

/** One move of a machine: the states it leaves from, the state it reaches, and how it is logged. */
export interface Move<T extends PgTable, S extends string> {
  /** What the actor is doing, for the 409 message: "validate", "accept"… */
  verb: string;
  from: readonly S[];
  to: S;
  /** The activity-log action; may depend on the state left (a validation vs a reinstatement). */
  action: string | ((before: S) => string);
  /** Other columns the move sets, computed from the row before it. */
  set?: (before: T['$inferSelect']) => PgUpdateSetSource<T>;
  /** Extra facts for the log's `after` (the documents asked for). */
  details?: Record<string, unknown>;
}

export interface Moved<T extends PgTable, S extends string> {
  /** The row after the move. */
  row: T['$inferSelect'];
  /** The row before it. */
  previous: T['$inferSelect'];
  /** The state left. */
  before: S;
}

/** The 409 of a move its row's state does not allow; the envelope carries `current_status`. */
export function illegalMove(machine: Pick<StateMachineSpec<PgTable, string>, 'noun' | 'stateName'>, verb: string, current: string, from: readonly string[]) {
  const article = /^[aeiou]/i.test(machine.noun) ? 'an' : 'a';
  return new AppError('conflict', `Cannot ${verb} ${article} ${machine.noun} whose ${machine.stateName} is ${current} (allowed from: ${from.join(', ')})`, {
    extra: { current_status: current },
  });
}

/**
 * Moves one row of a state machine, in one transaction (the caller's when given one): the row is
 * locked, its state checked against `from`, then changed by a conditional
 * `UPDATE … WHERE key = $id AND state IN (from) RETURNING *`, and the move recorded in the activity
 * log and, as a domain event of type `action`, in the outbox by the same transaction. No such row answers 404; a state the move does not leave from
 * answers 409 `{ error: 'conflict', message, current_status }`.
 *
 * The conditional update is what makes two racing moves end with exactly one winner; the lock taken
 * first makes the state read the one replaced, so the log's "before" and a move computed from the
 * previous row (a reinstatement keeps its first validation date) are exact. The loser of a race
 * waits on the lock, then reads the winner's state and answers 409 with it.
 */
export async function transition<T extends PgTable, S extends string>(
  db: DbTx,
  deps: TransitionDeps,
  machine: StateMachine<T, S>,
  id: number,
  move: Move<T, S>,
): Promise<Moved<T, S>> {
  const { table, key, state, stateKey } = machine;
  const where = (...more: (SQL | undefined)[]) => and(eq(key, id), machine.scope?.(), ...more);
  return withTransaction(db, async (tx) => {
    // The generic table leaves drizzle unable to type the rows; they are the table's rows.
    const [previous] = (await tx
      .select()
      .from(table as PgTable)
      .where(where())
      .for('update')) as T['$inferSelect'][];
    if (!previous) throw AppError.notFound(machine.label);
    const before = previous[stateKey] as S;
    if (!move.from.includes(before)) throw illegalMove(machine, move.verb, before, move.from);

    const values = { ...machine.stamp?.(), ...move.set?.(previous), [stateKey]: move.to } as PgUpdateSetSource<T>;
    const [row] = (await tx
      .update(table)
      .set(values)
      .where(where(inArray(state, [...move.from])))
      .returning()) as T['$inferSelect'][];
    if (!row) {
      // Only a machine whose rows change without the lock gets here; the answer is the same 409.
      const [current] = (await tx.select().from(table as PgTable).where(where())) as T['$inferSelect'][];
      if (!current) throw AppError.notFound(machine.label);
      throw illegalMove(machine, move.verb, current[stateKey] as string, move.from);
    }

    const action = typeof move.action === 'function' ? move.action(before) : move.action;
    // Two independent inserts of the same transaction: sent together (pipelined on one connection).
    await Promise.all([
      deps.recorder.record(
        deps.actor,
        action,
        { type: machine.subjectType, id },
        { before: machine.audit(previous), after: { ...machine.audit(row), ...move.details } },
        tx,
      ),
      deps.outbox.publish(
        deps.actor,
        { type: action, subject: { type: machine.subjectType, id }, payload: { from: before, to: move.to, ...machine.audit(row), ...move.details } },
        tx,
      ),
    ]);
    return { row, previous, before };
  });
}

/**
 * Which rows a bulk move takes: these keys, or the rows a condition selects (the first `limit` of
 * them in `orderBy`: a timer's batch).
 */
export type MoveTargets =
  | readonly number[]
  | {
      where: SQL | undefined;
      orderBy?: (PgColumn | SQL)[];
      limit?: number;
      /** Leave the rows another transaction holds to it (a timer on another instance) instead of waiting for them. */
      skipLocked?: boolean;
    };

/**
 * A move of many rows at once (a timer's): as `Move`, but what it sets is the same for every row, as
 * one UPDATE sets it, and there is no 409 to word.
 */
export interface BulkMove<T extends PgTable, S extends string> extends Omit<Move<T, S>, 'verb' | 'set'> {
  set?: () => PgUpdateSetSource<T>;
}

/**
 * Moves every targeted row that is in a `from` state, in one transaction (the caller's when given
 * one): the rows are locked as `transition` locks one,
 *
 *   SELECT * FROM t WHERE <targets> AND state IN (from) [ORDER BY … LIMIT n] FOR UPDATE [SKIP LOCKED]
 *
 * then moved by one conditional `UPDATE t SET state = to, … WHERE key IN (locked) AND state IN (from)
 * RETURNING *`, and one activity-log entry and one outbox event recorded per moved row, as
 * `transition` records them, each kind in one multi-row insert. A row in another state is skipped,
 * not overwritten, and is no error: a row a user moved meanwhile (a request cancelled while its
 * expiry was due) stays as the user left it; the lock waits for that user's transaction and the
 * state is read again once it ends. Nothing to move costs the one select. Answers the moved rows,
 * in no particular order.
 */
export async function transitionMany<T extends PgTable, S extends string>(
  db: DbTx,
  deps: TransitionDeps,
  machine: StateMachine<T, S>,
  targets: MoveTargets,
  move: BulkMove<T, S>,
): Promise<Moved<T, S>[]> {
  if (isKeyList(targets) && targets.length === 0) return [];
  const { table, key, state, stateKey, keyKey } = machine;
  const spec = isKeyList(targets) ? { where: inArray(key, [...targets]) } : targets;
  const from = [...move.from];
  return withTransaction(db, async (tx) => {
    let due = tx
      .select()
      .from(table as PgTable)
      .where(and(spec.where, machine.scope?.(), inArray(state, from)))
      .$dynamic();
    if (spec.orderBy?.length) due = due.orderBy(...spec.orderBy);
    if (spec.limit !== undefined) due = due.limit(spec.limit);
    // The generic table leaves drizzle unable to type the rows; they are the table's rows.
    const locked = (await due.for('update', spec.skipLocked ? { skipLocked: true } : {})) as T['$inferSelect'][];
    if (locked.length === 0) return [];

    const previous = new Map(locked.map((row) => [row[keyKey] as number, row]));
    const values = { ...machine.stamp?.(), ...move.set?.(), [stateKey]: move.to } as PgUpdateSetSource<T>;
    const rows = (await tx
      .update(table)
      .set(values)
      .where(and(inArray(key, [...previous.keys()]), inArray(state, from)))
      .returning()) as T['$inferSelect'][];
    if (rows.length === 0) return [];

    const moved = rows.map((row) => {
      const before = previous.get(row[keyKey] as number)!;
      return { row, previous: before, before: before[stateKey] as S };
    });
    const actionOf = (before: S) => (typeof move.action === 'function' ? move.action(before) : move.action);
    const subjectOf = (row: T['$inferSelect']) => ({ type: machine.subjectType, id: row[keyKey] as number });
    // Two independent inserts of the same transaction: sent together (pipelined on one connection).
    await Promise.all([
      deps.recorder.recordMany(
        deps.actor,
        moved.map((m) => ({
          action: actionOf(m.before),
          subject: subjectOf(m.row),
          details: { before: machine.audit(m.previous), after: { ...machine.audit(m.row), ...move.details } },
        })),
        tx,
      ),
      deps.outbox.publish(
        deps.actor,
        moved.map((m) => ({
          type: actionOf(m.before),
          subject: subjectOf(m.row),
          payload: { from: m.before, to: move.to, ...machine.audit(m.row), ...move.details },
        })),
        tx,
      ),
    ]);
    return moved;
  });
}

function isKeyList(targets: MoveTargets): targets is readonly number[] {
  return Array.isArray(targets);
}
