import { withTransaction } from '@repo/db';
import { AppError } from '@repo/http';
import { randomUUID } from 'node:crypto';
import type { DbTx } from '../../db/index.js';
import type { ConnectedAccount } from '../../db/schema/index.js';
import type { ProcessorAccount } from '../../integrations/payments/index.js';
import { systemActor, type Actor, type Caller } from '../../lib/context.js';
import * as accounts from './accounts.repository.js';
import { WAITING_FOR_ACCOUNT, type PaymentsContext } from './payments.context.js';
import type { TransfersService } from './transfers.service.js';

/** The IBAN check of ISO 13616: country, check digits, then mod 97 of the rearranged number is 1. */
export function isValidIban(iban: string): boolean {
  if (!/^[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}$/.test(iban)) return false;
  const rearranged = iban.slice(4) + iban.slice(0, 4);
  let remainder = 0;
  for (const ch of rearranged) {
    const digits = /[A-Z]/.test(ch) ? String(ch.charCodeAt(0) - 55) : ch;
    for (const d of digits) remainder = (remainder * 10 + Number(d)) % 97;
  }
  return remainder === 1;
}

/** What an account's capabilities are, as the processor reports them (Stripe's `transfers` capability for transfers). */
function capabilitiesOf(remote: ProcessorAccount) {
  return {
    chargesEnabled: remote.chargesEnabled,
    payoutsEnabled: remote.payoutsEnabled,
    detailsSubmitted: remote.detailsSubmitted,
    transfersEnabled: remote.transfersEnabled,
    requirements: remote.requirements,
  };
}

/** Whether an `account.updated` event's object may receive transfers. */
function transfersEnabledIn(object: Record<string, unknown>): boolean {
  const capability = (object.capabilities as { transfers?: unknown } | undefined)?.transfers;
  return typeof capability === 'string' ? capability === 'active' : object.charges_enabled === true;
}

/** What the activity log keeps of a connected account: ids and capabilities, never the IBAN. */
function accountAudit(a: Pick<ConnectedAccount, 'accountId' | 'chargesEnabled' | 'payoutsEnabled' | 'detailsSubmitted' | 'requirements'>) {
  return {
    account_id: a.accountId,
    charges_enabled: a.chargesEnabled,
    payouts_enabled: a.payoutsEnabled,
    details_submitted: a.detailsSubmitted,
    requirements: a.requirements,
  };
}

/** The 409 of a payout or a bank account asked before the account exists. */
export const notOnboarded = () => new AppError('conflict', 'Start the onboarding first (POST /prestataire/psp/onboard)', { extra: { current_status: 'not_onboarded' } });

/**
 * The prestataire's connected account at the processor (Stripe Connect Express): created once, its
 * onboarding form, its bank account, and its capabilities, whose change lets the shares that waited
 * for it go out (DESIGN.md §11: by the processor's `account.updated`, or the worker's re-read).
 */
export function createAccountsService(ctx: PaymentsContext, parts: { transfers: TransfersService }) {
  const { db, processor } = ctx;

  return {
    /** Creates the prestataire's connected account once, and answers a link to the processor's onboarding form. */
    async onboard(actor: Actor) {
      const { email } = await accounts.userIdentity(db, actor.userId);
      let account = await accounts.findConnectedAccount(db, actor.userId);
      if (!account) {
        // Outside any transaction, with a key of the prestataire alone: two onboardings at once get
        // the same account from the processor, and the first to record it wins.
        const created = await processor.createAccount({ email, idempotencyKey: `account-prestataire-${actor.userId}` });
        account = await withTransaction(db, async (tx) => {
          await accounts.lockOnboarding(tx, actor.userId);
          const existing = await accounts.findConnectedAccount(tx, actor.userId);
          if (existing) return existing;
          const row = await accounts.insertConnectedAccount(tx, { prestataireId: actor.userId, accountId: created.id, ...capabilitiesOf(created) });
          await ctx.recorder.record(actor, 'psp_account.created', { type: 'user', id: actor.userId }, { after: accountAudit(row) }, tx);
          return row;
        });
      }
      const link = await processor.createAccountLink({ accountId: account.accountId, returnUrl: ctx.config.returnUrl, refreshUrl: ctx.config.refreshUrl });
      await ctx.deliverBuiltinEvents();
      return { account: (await accounts.findConnectedAccount(db, actor.userId))!, url: link.url, expiresAt: link.expiresAt };
    },

    /**
     * The connected account as the processor sees it now (capabilities, outstanding requirements).
     * It only reads: held shares go out on the processor's `account.updated`, or the worker's re-read.
     */
    async accountStatus(actor: Actor) {
      const account = await accounts.findConnectedAccount(db, actor.userId);
      if (!account) return null;
      const remote = await processor.retrieveAccount(account.accountId);
      return { ...account, ...capabilitiesOf(remote) };
    },

    /** Sets the bank account payouts go to; an IBAN failing its mod-97 check answers 422. */
    async setIban(actor: Actor, input: { iban: string; account_holder_name?: string }) {
      const iban = input.iban.replace(/\s+/g, '').toUpperCase();
      if (!isValidIban(iban)) throw AppError.validation({ iban: ['Must be a valid IBAN (its check digits do not match)'] });
      const account = await accounts.findConnectedAccount(db, actor.userId);
      if (!account) throw notOnboarded();
      const who = await accounts.userIdentity(db, actor.userId);
      const holder = input.account_holder_name ?? who.businessName ?? `${who.firstName} ${who.lastName}`;
      // The key names the call, never the IBAN (keys land in the processor's request logs); the
      // SDK's own retries of this call reuse it.
      const bank = await processor.setBankAccount({ accountId: account.accountId, iban, holderName: holder, idempotencyKey: `bank-account-${account.accountId}-${randomUUID()}` });
      const updated = await withTransaction(db, async (tx) => {
        const row = await accounts.updateConnectedAccount(tx, actor.userId, { bankAccountId: bank.id, ibanLast4: bank.last4 });
        await ctx.recorder.record(actor, 'psp_account.bank_account_set', { type: 'user', id: actor.userId }, { before: { iban_last4: account.ibanLast4 }, after: { iban_last4: row.ibanLast4 } }, tx);
        return row;
      });
      await ctx.deliverBuiltinEvents();
      return (await accounts.findConnectedAccount(db, actor.userId)) ?? updated;
    },

    /** `account.updated`: the account's capabilities as the processor now reports them. */
    async accountUpdated(tx: DbTx, actor: Caller, object: Record<string, unknown>): Promise<void> {
      const accountId = typeof object.id === 'string' && object.id.length > 0 ? object.id : null;
      const account = accountId ? await accounts.findConnectedAccountById(tx, accountId) : undefined;
      if (!account) return;
      const requirements = (object.requirements as { currently_due?: unknown } | undefined)?.currently_due;
      const updated = await accounts.updateConnectedAccount(tx, account.prestataireId, {
        chargesEnabled: object.charges_enabled === true,
        payoutsEnabled: object.payouts_enabled === true,
        detailsSubmitted: object.details_submitted === true,
        transfersEnabled: transfersEnabledIn(object),
        requirements: Array.isArray(requirements) ? requirements.filter((r): r is string => typeof r === 'string') : account.requirements,
      });
      await ctx.recorder.record(actor, 'psp_account.updated', { type: 'user', id: account.prestataireId }, { before: accountAudit(account), after: accountAudit(updated) }, tx);
      // The shares that waited for this account go out (events may come late or twice: a share
      // already on its way is not sent again).
      if (updated.transfersEnabled) await parts.transfers.releaseWaitingShares(tx, actor, account.prestataireId);
    },

    /** Re-reads the accounts whose shares wait for them, and sends the shares of those now able to receive them. */
    async refreshWaitingAccounts(): Promise<void> {
      for (const { prestataireId, accountId } of await accounts.accountsWithWaitingShares(db, WAITING_FOR_ACCOUNT)) {
        let remote: ProcessorAccount;
        try {
          remote = await ctx.raw.retrieveAccount(accountId);
        } catch (error) {
          ctx.log?.warn({ err: error, prestataire_id: prestataireId }, 'connected account unavailable for its waiting shares');
          continue;
        }
        await withTransaction(db, async (tx) => {
          const updated = await accounts.updateConnectedAccount(tx, prestataireId, capabilitiesOf(remote));
          if (updated.transfersEnabled) await parts.transfers.releaseWaitingShares(tx, systemActor, prestataireId);
        });
      }
    },
  };
}

export type AccountsService = ReturnType<typeof createAccountsService>;
