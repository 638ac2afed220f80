import { AppError, pageMeta, pageOffset } from '@repo/http';
import type { MoneyMove, Payment, PaymentStatus } from '../../db/schema/index.js';
import type { Actor } from '../../lib/context.js';
import { addDays, isCalendarDate, startOfDayIn } from '../../lib/time.js';
import * as ledger from './ledger.repository.js';
import * as moves from './money-moves.repository.js';
import { visiblePayment, type PaymentsContext } from './payments.context.js';
import * as repo from './payments.repository.js';

/** What payments read: the parties' history, the administrators' lists, figures, ledger and money moves. */
export function createPaymentReports(ctx: PaymentsContext) {
  const { db, config } = ctx;

  /** A range of creation or payment instants: calendar dates in the platform's zone (both inclusive), or instants. */
  function range(from: string | undefined, to: string | undefined) {
    const zone = config.timeZone;
    const start = from === undefined ? undefined : isCalendarDate(from) ? startOfDayIn(zone, from) : new Date(from);
    const end = to === undefined ? undefined : isCalendarDate(to) ? startOfDayIn(zone, addDays(to, 1)) : new Date(new Date(to).getTime() + 1);
    if (start && end && end <= start) throw AppError.validation({ to: ['Must not be before `from`'] });
    return { from: start, to: end };
  }

  return {
    async history(actor: Actor, query: { page: number; per_page: number; status?: PaymentStatus }) {
      const { rows, total } = await repo.listPayments(db, { partyId: actor.userId, status: query.status }, query.per_page, pageOffset(query.page, query.per_page));
      return { rows, meta: pageMeta(query.page, query.per_page, total) };
    },

    async show(actor: Actor, paymentId: number): Promise<Payment> {
      return visiblePayment(ctx, actor, paymentId);
    },

    async list(query: { page: number; per_page: number; status?: PaymentStatus; user_id?: number; client_id?: number; prestataire_id?: number; from?: string; to?: string }) {
      const { rows, total } = await repo.listPayments(
        db,
        { status: query.status, partyId: query.user_id, clientId: query.client_id, prestataireId: query.prestataire_id, ...range(query.from, query.to) },
        query.per_page,
        pageOffset(query.page, query.per_page),
      );
      return { rows, meta: pageMeta(query.page, query.per_page, total) };
    },

    async stats(query: { group_by: 'day' | 'month'; from?: string; to?: string }) {
      const periods = await repo.paymentStats(db, { zone: config.timeZone, unit: query.group_by, ...range(query.from, query.to) });
      const totals = periods.reduce(
        (t, p) => ({ count: t.count + p.count, volume: t.volume + p.volume, commission: t.commission + p.commission, refunds: t.refunds + p.refunds }),
        { count: 0, volume: 0, commission: 0, refunds: 0 },
      );
      return { periods, totals };
    },

    /** A payment's money moves, oldest first (404 when there is no such payment). */
    async moneyMoves(paymentId: number): Promise<MoneyMove[]> {
      if (!(await repo.findPayment(db, paymentId))) throw AppError.notFound('Payment');
      return moves.movesOfPayment(db, paymentId);
    },

    /** The ledger's entries, filtered by payment or prestataire, with each account's balance over them. */
    async ledger(query: { page: number; per_page: number; payment_id?: number; prestataire_id?: number }) {
      const filters = { paymentId: query.payment_id, prestataireId: query.prestataire_id };
      const [{ rows, total }, totals] = await Promise.all([
        ledger.listEntries(db, filters, query.per_page, pageOffset(query.page, query.per_page)),
        ledger.balances(db, filters),
      ]);
      return { rows, totals, meta: pageMeta(query.page, query.per_page, total) };
    },

    /** How many moves wait on the processor (for /metrics). */
    moveStats: () => moves.liveMoveStats(db),
  };
}

export type PaymentReports = ReturnType<typeof createPaymentReports>;
