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
}

/** Checks a machine's definition once, at start-up: its state column must belong to its table. */
export function defineStateMachine<T extends PgTable, S extends string>(spec: StateMachineSpec<T, S>): StateMachine<T, S> {
  const entry = Object.entries(getTableColumns(spec.table)).find(([, column]) => column === spec.state);
  if (!entry) throw new Error(`state machine ${spec.noun}: the state column is not a column of its table`);
  return { ...spec, stateKey: entry[0] as keyof T['$inferSelect'] & string };
}

/** What records who made a move: the activity log's recorder. */
export interface MoveRecorder {
  record(
    actor: Caller,
    action: string,
    subject: { type: string; id: number | null },
    details: { before?: Record<string, unknown> | null; after?: Record<string, unknown> | null },
    tx?: DbTx,
  ): Promise<unknown>;
}

/** What publishes a move for the consumers that react to it: the outbox. */
export interface MovePublisher {
  publish(actor: Caller, event: { type: string; subject: { type: string; id: number }; payload: Record<string, unknown> }, tx?: DbTx): Promise<void>;
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
  return new AppError('conflict', `Cannot ${verb} a ${machine.noun} whose ${machine.stateName} is ${current} (allowed from: ${from.join(', ')})`, {
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
