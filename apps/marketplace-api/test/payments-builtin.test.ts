import { describe, expect, it } from 'vitest';
import { createBuiltinProcessor, ProcessorError } from '../src/integrations/payments/index.js';

async function refusal(promise: Promise<unknown>) {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ProcessorError);
  return error as ProcessorError;
}

describe('the built-in processor', () => {
  it('refuses transfers until onboarding, then lists refunds, transfers with reversals and payouts with their references', async () => {
    const processor = createBuiltinProcessor();
    const account = await processor.createAccount({ email: 'garage@example.test', idempotencyKey: 'account-1' });
    expect(account.transfersEnabled).toBe(false);
    const transfer = { amountCents: 6_000, currency: 'EUR', destination: account.id, transferGroup: 'appointment_1', sourceCharge: null, reference: 'transfer-1-1' };
    expect(await refusal(processor.createTransfer({ ...transfer, idempotencyKey: 'transfer-1-1' }))).toMatchObject({
      kind: 'refused',
      code: 'insufficient_capabilities_for_transfer',
    });

    await processor.createAccountLink({ accountId: account.id, returnUrl: 'https://app.test/return', refreshUrl: 'https://app.test/refresh' });
    await processor.setBankAccount({ accountId: account.id, iban: 'FR7630006000011234567890189', holderName: 'Garage', idempotencyKey: 'iban-1' });
    expect(await processor.retrieveAccount(account.id)).toMatchObject({ transfersEnabled: true, payoutsEnabled: true });

    const intent = await processor.createPaymentIntent({ amountCents: 10_000, currency: 'EUR', transferGroup: 'appointment_1', metadata: {}, idempotencyKey: 'payment-1' });
    await processor.simulate(intent.id, 'succeeded');
    expect(await processor.refund({ intentId: intent.id, amountCents: 1_000, reason: 'r', idempotencyKey: 'refund-1-1', reference: 'refund-1-1' })).toMatchObject({
      amountCents: 1_000,
      status: 'succeeded',
    });
    expect(await refusal(processor.refund({ intentId: intent.id, amountCents: 9_500, reason: 'r', idempotencyKey: 'refund-2-1' }))).toMatchObject({
      kind: 'refused',
      code: 'amount_too_large',
    });
    expect(await processor.listRefunds(intent.id)).toEqual([expect.objectContaining({ amountCents: 1_000, status: 'succeeded', reference: 'refund-1-1' })]);
    expect(await processor.retrievePaymentIntent(intent.id)).toMatchObject({ amountRefundedCents: 1_000 });

    const sent = await processor.createTransfer({ ...transfer, idempotencyKey: 'transfer-1-2' });
    expect(sent.amountCents).toBe(6_000);
    const reversal = await processor.reverseTransfer({ transferId: sent.id, amountCents: 600, idempotencyKey: 'reversal-1-1', reference: 'reversal-1-1' });
    expect(await processor.listTransfers('appointment_1')).toEqual([
      {
        id: sent.id,
        amountCents: 6_000,
        reversedCents: 600,
        destination: account.id,
        reference: 'transfer-1-1',
        reversals: [{ id: reversal.id, amountCents: 600, reference: 'reversal-1-1' }],
      },
    ]);

    const payout = await processor.createPayout({ accountId: account.id, amountCents: 5_400, currency: 'EUR', idempotencyKey: 'payout-1-1', reference: 'payout-1-1' });
    expect(await refusal(processor.createPayout({ accountId: account.id, amountCents: 1, currency: 'EUR', idempotencyKey: 'payout-2-1' }))).toMatchObject({
      code: 'balance_insufficient',
    });
    expect(await processor.listPayouts(account.id)).toEqual([{ id: payout.id, amountCents: 5_400, status: 'paid', reference: 'payout-1-1' }]);
    expect(await refusal(processor.retrievePaymentIntent('pi_missing'))).toMatchObject({ kind: 'refused', code: 'resource_missing', statusCode: 404 });
  });
});
