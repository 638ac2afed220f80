/**
 * The platform's commission and the prestataire's share, in integer cents (DESIGN.md §6). Pure
 * functions: the property test checks that commission + share = charge and that reversals never
 * exceed the share, for any price and settings.
 */

import type { Payment } from '../../db/schema/index.js';

/** The commission settings: a percentage in basis points (1 250 = 12.5 %), a fixed part and a minimum, in cents. */
export interface CommissionSettings {
  percentBasisPoints: number;
  fixedCents: number;
  minimumCents: number;
}

export const DEFAULT_COMMISSION: CommissionSettings = { percentBasisPoints: 1000, fixedCents: 0, minimumCents: 0 };

/** The platform's part of a charge: percentage + fixed part, at least the minimum, never more than the charge. */
export function commissionFor(amountCents: number, s: CommissionSettings): number {
  const computed = Math.round((amountCents * s.percentBasisPoints) / 10_000) + s.fixedCents;
  return Math.min(amountCents, Math.max(s.minimumCents, computed));
}

/** The prestataire's share of a charge: what is left once the commission is taken. */
export function shareFor(amountCents: number, commissionCents: number): number {
  return amountCents - commissionCents;
}

/**
 * How much of the share goes back when `refundedCents` of the charge are refunded: the same
 * proportion, so a full refund takes back the whole share.
 */
export function shareReversedFor(share: number, amountCents: number, refundedCents: number): number {
  if (amountCents <= 0 || refundedCents <= 0) return 0;
  if (refundedCents >= amountCents) return share;
  return Math.round((share * refundedCents) / amountCents);
}

const wholeCents = (v: unknown): number | null => (typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : null);

/** The settings as stored (`platform_settings.commission`); the defaults when absent or malformed. */
export function commissionSettingsFrom(stored: unknown): CommissionSettings {
  if (stored && typeof stored === 'object') {
    const s = stored as Record<string, unknown>;
    const bp = wholeCents(s.percent_basis_points);
    const fixed = wholeCents(s.fixed_cents);
    const min = wholeCents(s.minimum_cents);
    if (bp !== null && fixed !== null && min !== null) return { percentBasisPoints: bp, fixedCents: fixed, minimumCents: min };
  }
  return DEFAULT_COMMISSION;
}

/**
 * What the prestataire should receive of a payment now: its share less what refunds took back,
 * counting the refunds on their way (a share sent before them would only be reversed after).
 */
export function transferable(p: Pick<Payment, 'amountCents' | 'commissionCents' | 'refundedCents'>, pendingRefunds = 0): number {
  const share = shareFor(p.amountCents, p.commissionCents);
  return share - shareReversedFor(share, p.amountCents, Math.min(p.amountCents, p.refundedCents + pendingRefunds));
}
