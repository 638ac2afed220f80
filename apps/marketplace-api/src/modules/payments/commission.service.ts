import { withTransaction } from '@repo/db';
import type { DbTx } from '../../db/index.js';
import type { Actor } from '../../lib/context.js';
import { commissionSettingsFrom, type CommissionSettings } from './commission.js';
import type { PaymentsContext } from './payments.context.js';
import * as repo from './payments.repository.js';

/** The platform's commission settings (DESIGN.md §6): read when a charge succeeds, changed by administrators. */
export function createCommissionService(ctx: PaymentsContext) {
  /** The settings now, in the caller's transaction when given one. */
  async function current(tx?: DbTx): Promise<CommissionSettings> {
    return commissionSettingsFrom(await repo.readCommissionSettings(tx ?? ctx.db));
  }

  return {
    current,

    async getCommissionSettings(): Promise<CommissionSettings> {
      return current();
    },

    /** Applies to payments not yet paid: the commission is fixed when a charge succeeds. */
    async updateCommissionSettings(actor: Actor, next: CommissionSettings): Promise<CommissionSettings> {
      return withTransaction(ctx.db, async (tx) => {
        await repo.lockCommissionSettings(tx);
        const before = await current(tx);
        await repo.writeCommissionSettings(
          tx,
          { percent_basis_points: next.percentBasisPoints, fixed_cents: next.fixedCents, minimum_cents: next.minimumCents },
          actor.userId,
        );
        await ctx.recorder.record(actor, 'commission_settings.updated', { type: 'settings', id: null }, { before: { ...before }, after: { ...next } }, tx);
        return next;
      });
    },
  };
}

export type CommissionService = ReturnType<typeof createCommissionService>;
