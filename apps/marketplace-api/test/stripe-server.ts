import { createServer, type IncomingHttpHeaders } from 'node:http';

/** A request the fake API received: method, path, form fields, the headers the SDK sends. */
export interface StripeRequest {
  method: string;
  path: string;
  form: Record<string, string>;
  idempotencyKey?: string;
  stripeAccount?: string;
  authorization?: string;
}

type Obj = Record<string, unknown>;

/**
 * A local HTTP server answering as Stripe's API does for the calls the payments module makes
 * (PaymentIntents, refunds, Express accounts and links, external accounts, transfers and reversals,
 * balance, payouts), with idempotency keys replayed as Stripe replays them. The stripe SDK is
 * pointed at it with its host/port/protocol options.
 */
export async function startStripeServer() {
  const requests: StripeRequest[] = [];
  const intents = new Map<string, Obj>();
  const accounts = new Map<string, Obj>();
  const transfers = new Map<string, Obj>();
  const balances = new Map<string, number>();
  const replays = new Map<string, { status: number; body: Obj }>();
  let n = 0;
  const id = (prefix: string) => `${prefix}_fake${++n}`;
  /** The next create of a PaymentIntent fails as a card error would (402). */
  const failures: { path: string; status: number; body: Obj }[] = [];

  function error(status: number, message: string, type = 'invalid_request_error') {
    return { status, body: { error: { type, message } } };
  }

  function answer(method: string, path: string, form: Record<string, string>, headers: IncomingHttpHeaders): { status: number; body: Obj } {
    const parts = path.split('?')[0]!.split('/').filter(Boolean); // ['v1', …]
    const failure = failures.findIndex((f) => f.path === `${method} ${parts.join('/')}`);
    if (failure >= 0) return failures.splice(failure, 1)[0]!;
    const [, resource, rid, sub] = parts;
    const account = headers['stripe-account'] as string | undefined;
    if (resource === 'payment_intents') {
      if (method === 'POST' && !rid) {
        const pi = {
          id: id('pi'),
          object: 'payment_intent',
          amount: Number(form.amount),
          currency: form.currency,
          status: 'requires_payment_method',
          client_secret: `secret_${n}`,
          latest_charge: null,
          last_payment_error: null,
          transfer_group: form.transfer_group,
          metadata: Object.fromEntries(Object.entries(form).filter(([k]) => k.startsWith('metadata[')).map(([k, v]) => [k.slice(9, -1), v])),
        };
        intents.set(pi.id, pi);
        return { status: 200, body: pi };
      }
      const pi = rid ? intents.get(rid) : undefined;
      if (!pi) return error(404, `No such payment_intent: '${rid}'`);
      if (method === 'POST' && form.amount) pi.amount = Number(form.amount);
      return { status: 200, body: pi };
    }
    if (resource === 'refunds' && method === 'POST') {
      const pi = intents.get(form.payment_intent ?? '');
      if (!pi || pi.status !== 'succeeded') return error(400, 'This PaymentIntent does not have a successful charge to refund.');
      return { status: 200, body: { id: id('re'), object: 'refund', amount: Number(form.amount), payment_intent: pi.id, status: 'succeeded' } };
    }
    if (resource === 'accounts') {
      if (method === 'POST' && !rid) {
        const acct = {
          id: id('acct'),
          object: 'account',
          type: form.type,
          email: form.email,
          charges_enabled: false,
          payouts_enabled: false,
          details_submitted: false,
          requirements: { currently_due: ['external_account', 'individual.dob.day'] },
        };
        accounts.set(acct.id, acct);
        return { status: 200, body: acct };
      }
      const acct = rid ? accounts.get(rid) : undefined;
      if (!acct) return error(404, `No such account: '${rid}'`);
      if (method === 'POST' && sub === 'external_accounts') {
        const iban = form['external_account[account_number]'] ?? '';
        return { status: 200, body: { id: id('ba'), object: 'bank_account', last4: iban.slice(-4), account: acct.id } };
      }
      return { status: 200, body: acct };
    }
    if (resource === 'account_links' && method === 'POST') {
      if (!accounts.has(form.account ?? '')) return error(404, 'No such account');
      return { status: 200, body: { object: 'account_link', url: `https://connect.stripe.test/setup/${form.account}`, expires_at: Math.floor(Date.now() / 1000) + 300 } };
    }
    if (resource === 'transfers') {
      if (method === 'POST' && !rid) {
        const tr = { id: id('tr'), object: 'transfer', amount: Number(form.amount), amount_reversed: 0, destination: form.destination, transfer_group: form.transfer_group };
        transfers.set(tr.id, tr);
        balances.set(form.destination!, (balances.get(form.destination!) ?? 0) + tr.amount);
        return { status: 200, body: tr };
      }
      const tr = rid ? transfers.get(rid) : undefined;
      if (!tr) return error(404, 'No such transfer');
      if (method === 'POST' && sub === 'reversals') {
        const amount = Number(form.amount);
        tr.amount_reversed = (tr.amount_reversed as number) + amount;
        balances.set(tr.destination as string, (balances.get(tr.destination as string) ?? 0) - amount);
        return { status: 200, body: { id: id('trr'), object: 'transfer_reversal', amount, transfer: tr.id } };
      }
      return { status: 200, body: tr };
    }
    if (resource === 'balance' && method === 'GET') {
      return { status: 200, body: { object: 'balance', available: [{ amount: balances.get(account ?? '') ?? 0, currency: 'eur' }], pending: [] } };
    }
    if (resource === 'payouts' && method === 'POST') {
      if (!account) return error(400, 'Payouts of a connected account need its Stripe-Account header');
      const amount = Number(form.amount);
      if (amount > (balances.get(account) ?? 0)) return error(400, 'Insufficient funds');
      balances.set(account, (balances.get(account) ?? 0) - amount);
      return { status: 200, body: { id: id('po'), object: 'payout', amount, currency: form.currency, status: 'pending' } };
    }
    return error(404, `Unrecognized request URL (${method}: ${path})`);
  }

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const form = Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString('utf8')));
      const key = req.headers['idempotency-key'] as string | undefined;
      requests.push({
        method: req.method!,
        path: req.url!,
        form,
        idempotencyKey: key,
        stripeAccount: req.headers['stripe-account'] as string | undefined,
        authorization: req.headers.authorization,
      });
      // Stripe answers a replayed key with the first answer, except a request refused before it ran
      // (a 400 of validation is not saved, so a corrected retry may reuse the key).
      const replayKey = key && `${req.method} ${req.url} ${key}`;
      const result = (replayKey && replays.get(replayKey)) || answer(req.method!, req.url!, form, req.headers);
      if (replayKey && req.method === 'POST' && result.status !== 400) replays.set(replayKey, result);
      res.writeHead(result.status, { 'content-type': 'application/json', 'request-id': `req_${n}` }).end(JSON.stringify(result.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    port,
    requests,
    intents,
    accounts,
    transfers,
    balances,
    failures,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export type StripeServer = Awaited<ReturnType<typeof startStripeServer>>;
