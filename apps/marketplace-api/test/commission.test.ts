import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { commissionFor, shareFor, shareReversedFor } from '../src/modules/payments/commission.js';
import { isValidIban } from '../src/modules/payments/accounts.service.js';

const amount = fc.integer({ min: 1, max: 100_000_000 });
const settings = fc.record({
  percentBasisPoints: fc.integer({ min: 0, max: 10_000 }),
  fixedCents: fc.integer({ min: 0, max: 1_000_000 }),
  minimumCents: fc.integer({ min: 0, max: 1_000_000 }),
});

describe('commission and share', () => {
  it('commission + transfer = charge, both whole non-negative cents, for any price and settings', () => {
    fc.assert(
      fc.property(amount, settings, (charge, s) => {
        const commission = commissionFor(charge, s);
        const transfer = shareFor(charge, commission);
        expect(Number.isInteger(commission) && Number.isInteger(transfer)).toBe(true);
        expect(commission).toBeGreaterThanOrEqual(0);
        expect(transfer).toBeGreaterThanOrEqual(0);
        expect(commission + transfer).toBe(charge);
        // The minimum holds unless it exceeds the charge itself.
        expect(commission).toBeGreaterThanOrEqual(Math.min(charge, s.minimumCents));
      }),
      { numRuns: 2000 },
    );
  });

  it('refunds never exceed the charge, and reversals never the transfer; each refund reverses no less than the last', () => {
    fc.assert(
      fc.property(amount, settings, fc.array(fc.integer({ min: 1, max: 100_000_000 }), { maxLength: 8 }), (charge, s, requests) => {
        const transfer = shareFor(charge, commissionFor(charge, s));
        let refunded = 0;
        let reversed = 0;
        for (const requested of requests) {
          // The service refuses more than what is left (422); what it accepts is at most that.
          const accepted = Math.min(requested, charge - refunded);
          if (accepted <= 0) continue;
          refunded += accepted;
          const next = shareReversedFor(transfer, charge, refunded);
          expect(next).toBeGreaterThanOrEqual(reversed);
          reversed = next;
        }
        expect(refunded).toBeLessThanOrEqual(charge);
        expect(reversed).toBeLessThanOrEqual(transfer);
        if (refunded === charge) expect(reversed).toBe(transfer);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('IBAN check', () => {
  it('accepts valid IBANs and refuses a changed digit', () => {
    for (const iban of ['FR1420041010050500013M02606', 'DE89370400440532013000', 'GB82WEST12345698765432']) {
      expect(isValidIban(iban)).toBe(true);
      const changed = iban.slice(0, -1) + String((Number(iban.at(-1)) + 1) % 10);
      expect(isValidIban(changed)).toBe(false);
    }
    expect(isValidIban('FR14')).toBe(false);
    expect(isValidIban('not an iban at all')).toBe(false);
  });
});
