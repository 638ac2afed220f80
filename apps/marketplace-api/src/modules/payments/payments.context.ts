import { AppError } from '@repo/http';
import type { PgTable } from 'drizzle-orm/pg-core';
import type { DbTx } from '../../db/index.js';
import { PAID_PAYMENT_STATUSES, type MoneyMove, type Payment, type PaymentStatus } from '../../db/schema/index.js';
import type { PaymentProcessor } from '../../integrations/payments/index.js';
import type { Actor, Caller } from '../../lib/context.js';
import { transition, type Move, type StateMachine, type TransitionDeps } from '../../lib/transitions.js';
import type { ActivityRecorder } from '../activity-log/index.js';
import type { Outbox } from '../outbox/index.js';
import * as repo from './payments.repository.js';

export interface PaymentsConfig {
  returnUrl: string;
  refreshUrl: string;
  vatPercent: number;
  /** The platform's zone: stats by day or month, invoice years. */
  timeZone: string;
}

/** What the payments module is built from (`createPaymentsService`). */
export interface PaymentsDeps {
  db: DbTx;
  recorder: ActivityRecorder;
  outbox: Outbox;
  processor: PaymentProcessor;
  config: PaymentsConfig;
  now?: () => Date;
  /** How long a caller holds a money move: above the processor client's longest call with its retries. */
  moveLeaseMs?: number;
  log?: { warn(obj: object, msg: string): void };
}

/** The states a payment may be paid from (a declined card may be retried). */
export const PAYABLE: readonly PaymentStatus[] = ['requires_payment', 'processing', 'failed'];
export const PAID: readonly PaymentStatus[] = PAID_PAYMENT_STATUSES;
export const REFUNDABLE: readonly PaymentStatus[] = ['succeeded', 'partially_refunded'];
/** Held shares that go out by themselves once the prestataire's account can receive transfers. */
export const WAITING_FOR_ACCOUNT = ['no_connected_account', 'account_not_ready', 'transfer_refused'];

/** A built-in processor's delivery: what Stripe would post to the webhook. */
export interface BuiltinDelivery {
  payload: string;
  signature: string;
}

/**
 * What every part of the module works with. The last three are bound once every part exists: the
 * money moves' worker settles its answers through the parts, and the parts commit the moves it makes.
 */
export interface PaymentsContext {
  db: DbTx;
  recorder: ActivityRecorder;
  outbox: Outbox;
  config: PaymentsConfig;
  /** The processor with its failures as 502, for the calls a request waits on. */
  processor: PaymentProcessor;
  /** The processor as it is: money moves sort its failures themselves (money-moves.ts). */
  raw: PaymentProcessor;
  now: () => Date;
  log?: { warn(obj: object, msg: string): void };
  /** Drives the money moves a transaction committed, shortly after it has ended. */
  kick(): void;
  /** Makes one committed money move at the processor now; its row as it is after. */
  execute(id: number): Promise<MoneyMove | undefined>;
  /** The built-in processor's own webhook deliveries (a no-op with Stripe, which posts them). */
  deliverBuiltinEvents(events?: BuiltinDelivery[]): Promise<void>;
}

/**
 * The processor with its failures as 502: a declined call or an unreachable API is the processor's
 * answer, not a fault of ours (the transaction around the call rolls back).
 */
export function guarded(processor: PaymentProcessor): PaymentProcessor {
  return new Proxy(processor, {
    get(target, key, receiver) {
      const value: unknown = Reflect.get(target, key, receiver);
      if (typeof value !== 'function' || key === 'verifyWebhook' || key === 'takeEvents') return value;
      return async (...args: unknown[]) => {
        try {
          return await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        } catch (error) {
          if (error instanceof AppError) throw error;
          const message = error instanceof Error ? error.message : 'unknown error';
          throw new AppError('bad_gateway', `The payment processor refused the operation: ${message}`, { cause: error });
        }
      };
    },
  });
}

/** What a state move is recorded by: the activity log and the outbox, under the actor's name. */
export function moveDeps(ctx: PaymentsContext, actor: Caller): TransitionDeps {
  return { recorder: ctx.recorder, outbox: ctx.outbox, actor };
}

/**
 * A move of a row the caller holds locked, through `transition`, made only when the row's state
 * (read under that lock) is one the move leaves from; undefined otherwise. The processor tells the
 * same news more than once and in any order: a move already made, or overtaken, is no error here.
 */
export async function moveIfFrom<T extends PgTable, S extends string>(
  tx: DbTx,
  deps: TransitionDeps,
  machine: StateMachine<T, S>,
  id: number,
  current: S,
  move: Move<T, S>,
): Promise<T['$inferSelect'] | undefined> {
  if (!move.from.includes(current)) return undefined;
  return (await transition(tx, deps, machine, id, move)).row;
}

/**
 * A change of a payment that is not a move of its state (its creation, amount, dispute or hold): the
 * activity log and the outbox, in the transaction that made it, in the shape of a move's.
 */
export async function logged(
  ctx: PaymentsContext,
  tx: DbTx,
  actor: Caller,
  action: string,
  before: Payment | null,
  after: Payment,
  details: Record<string, unknown> = {},
): Promise<void> {
  const subject = { type: 'payment', id: after.id };
  const audit = repo.paymentAudit;
  await ctx.recorder.record(actor, action, subject, { before: before && audit(before), after: { ...audit(after), ...details } }, tx);
  await ctx.outbox.publish(actor, { type: action, subject, payload: { from: before?.status ?? null, to: after.status, ...audit(after), ...details } }, tx);
}

/** A payment the actor may see: its client, its prestataire, or an admin; 404 otherwise. */
export async function visiblePayment(ctx: PaymentsContext, actor: Actor, id: number): Promise<Payment> {
  const payment = await repo.findPayment(ctx.db, id);
  if (!payment || (actor.role !== 'admin' && payment.clientId !== actor.userId && payment.prestataireId !== actor.userId)) {
    throw AppError.notFound('Payment');
  }
  return payment;
}
