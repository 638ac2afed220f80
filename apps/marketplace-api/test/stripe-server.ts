import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import Stripe from 'stripe';
import { WEBHOOK_SECRET } from './payments-fixtures.js';

/** A request the fake API received: method, path, form fields (the query of a GET), the headers the SDK sends. */
export interface StripeRequest {
  method: string;
  path: string;
  form: Record<string, string>;
  idempotencyKey?: string;
  stripeAccount?: string;
  authorization?: string;
}

type Obj = Record<string, unknown>;

/** A path pattern: a RegExp tested on `METHOD /v1/path`, or a prefix of `/v1/path` or of `METHOD /v1/path`. */
export type PathPattern = string | RegExp;

export interface FaultSettings {
  /** Probability of answering 500 or 503 (alternately) without executing. */
  errorRate?: number;
  /** Probability of executing, saving the answer under the key, then closing the socket unanswered. */
  lostRate?: number;
  /** Probability of answering only `slowMs` after executing. */
  slowRate?: number;
  slowMs?: number;
  /** The same seed draws the same faults for the same sequence of requests. */
  seed?: number;
  /** Only requests matching one of these. */
  paths?: PathPattern[];
  /** Faults apply to writes (POST); with `reads`, to GETs too. */
  reads?: boolean;
}

export interface FaultStats {
  requests: number;
  executed: number;
  replayed: number;
  /** 500/503 drawn by errorRate, answered without executing. */
  errors: number;
  lost: number;
  slow: number;
  hung: number;
  /** 503 answered by `down`. */
  down: number;
  /** 409 idempotency_key_in_use: the key's first request was still executing. */
  keyInUse: number;
  /** 400 idempotency_error: the key came back with other parameters. */
  keyMismatch: number;
}

export interface DeliveryOptions {
  /** Probability that an event is delivered a second time. */
  duplicate?: number;
  /** Deliveries in a random order. */
  shuffle?: boolean;
  /** Each delivery waits a random 0..delayMs first; deliveries then run concurrently, so they arrive late and crossed. */
  delayMs?: number;
  seed?: number;
  secret?: string;
}

/** The processor's side of the money, in cents, for comparing with our ledger. */
export interface StripeLedgerView {
  intents: Record<string, { status: string; amount: number; captured: number; refunded: number }>;
  transferGroups: Record<string, { transferred: number; reversed: number }>;
  accounts: Record<string, { transferred: number; reversed: number; paidOut: number; pendingPayouts: number; balance: number }>;
}

/** A small seeded generator (mulberry32): the same seed, the same faults. */
function seeded(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

function matches(pattern: PathPattern, method: string, pathname: string) {
  const line = `${method} ${pathname}`;
  return typeof pattern === 'string' ? pathname.startsWith(pattern) || line.startsWith(pattern) : pattern.test(line);
}

const metadataOf = (form: Record<string, string>) =>
  Object.fromEntries(Object.entries(form).filter(([k]) => k.startsWith('metadata[')).map(([k, v]) => [k.slice(9, -1), v]));

/**
 * The answer to one request. `saved: false` marks a refusal before execution (a missing object or
 * parameter): Stripe keeps no idempotent result for it, so a corrected retry may reuse the key.
 */
interface Answer {
  status: number;
  body: Obj;
  saved?: boolean;
  /** Sent as `Stripe-Should-Retry` (the SDK's retries follow it). */
  shouldRetry?: boolean;
}

/**
 * A local HTTP server answering as Stripe's API does for the calls the payments module makes
 * (PaymentIntents, refunds, Express accounts and links, external accounts, transfers and reversals,
 * balance, payouts, and the lists of refunds, transfers, reversals and payouts). The stripe SDK is
 * pointed at it with its host/port/protocol options.
 *
 * Idempotency as Stripe keeps it (per key and Stripe-Account): a request that executed saves its
 * answer, errors included, and the same key with the same parameters gets it again; other
 * parameters get 400 `idempotency_error`; a key whose first request is still executing gets 409
 * `idempotency_key_in_use`. Faults (`faults`) are drawn from a seed; every state change emits a
 * Stripe-shaped event into `events`, which `deliverEvents` signs and posts.
 */
export async function startStripeServer() {
  const requests: StripeRequest[] = [];
  const intents = new Map<string, Obj>();
  const charges = new Map<string, Obj>();
  /** Refunds in creation order, per payment intent. */
  const refunds = new Map<string, Obj[]>();
  const accounts = new Map<string, Obj>();
  const transfers = new Map<string, Obj>();
  const reversals = new Map<string, Obj[]>();
  /** Payouts in creation order, per connected account. */
  const payouts = new Map<string, Obj[]>();
  const balances = new Map<string, number>();
  const events: Obj[] = [];
  const saved = new Map<string, { fingerprint: string; answer: Answer | null }>();
  let n = 0;
  const id = (prefix: string) => `${prefix}_fake${++n}`;
  const now = () => Math.floor(Date.now() / 1000);
  /** Answers the next matching request with this (before executing: nothing saved). */
  const failures: { path: string; status: number; body: Obj }[] = [];

  let settings: FaultSettings = {};
  let random = seeded(1);
  let errorsDrawn = 0;
  const hangs: { pattern: PathPattern; ms: number }[] = [];
  const fails: { pattern: PathPattern; status: number }[] = [];
  const losses: PathPattern[] = [];
  const savedFailures: PathPattern[] = [];
  const outages: { pattern: PathPattern; until: number }[] = [];
  const stats: FaultStats = { requests: 0, executed: 0, replayed: 0, errors: 0, lost: 0, slow: 0, hung: 0, down: 0, keyInUse: 0, keyMismatch: 0 };

  const faults = {
    stats,
    set(next: FaultSettings) {
      settings = { ...next };
      random = seeded(next.seed ?? 1);
    },
    /** No more random faults, hangs or outages. */
    clear() {
      settings = {};
      hangs.length = 0;
      fails.length = 0;
      losses.length = 0;
      savedFailures.length = 0;
      outages.length = 0;
    },
    /** The next matching request executes only after `ms`, holding its socket meanwhile. */
    hangNext(pattern: PathPattern, ms: number) {
      hangs.push({ pattern, ms });
    },
    /** The next matching request answers `status` (500 by default) without executing. */
    failNext(pattern: PathPattern, status = 500) {
      fails.push({ pattern, status });
    },
    /**
     * The next matching request fails while executing (nothing done): a 500 that Stripe keeps under
     * the request's key and replays to every retry with it for 24 hours, saying `Stripe-Should-Retry: false`.
     */
    failSavedNext(pattern: PathPattern) {
      savedFailures.push(pattern);
    },
    /** The next matching request executes and saves its answer, then its socket closes unanswered. */
    loseNext(pattern: PathPattern) {
      losses.push(pattern);
    },
    /** Every matching request answers 503 for `ms`. */
    down(pattern: PathPattern, ms: number) {
      outages.push({ pattern, until: Date.now() + ms });
    },
  };

  function emit(type: string, object: Obj, account?: string) {
    events.push({
      id: id('evt'),
      object: 'event',
      api_version: '2025-01-01',
      type,
      created: now(),
      livemode: false,
      pending_webhooks: 1,
      account: account ?? null,
      data: { object: structuredClone(object) },
    });
  }

  function error(status: number, message: string, opts: { type?: string; code?: string; saved?: boolean } = {}): Answer {
    return { status, body: { error: { type: opts.type ?? 'invalid_request_error', message, ...(opts.code ? { code: opts.code } : {}) } }, saved: opts.saved ?? true };
  }
  const missing = (what: string, rid: string | undefined) => error(404, `No such ${what}: '${rid}'`, { code: 'resource_missing', saved: false });
  const ok = (body: Obj): Answer => ({ status: 200, body });

  /** A Stripe list of `items` (oldest first), newest first, one page by `limit` and `starting_after`. */
  function list(url: string, items: Obj[], params: Record<string, string>) {
    const sorted = [...items].reverse();
    const start = params.starting_after ? sorted.findIndex((i) => i.id === params.starting_after) + 1 : 0;
    const limit = Number(params.limit ?? 10);
    return { object: 'list', url, has_more: start + limit < sorted.length, data: sorted.slice(start, start + limit) };
  }

  /** The charge of a succeeded intent, made on first need when a test set `latest_charge` by hand. */
  function chargeOf(pi: Obj): Obj | null {
    const cid = pi.latest_charge;
    if (typeof cid !== 'string') return null;
    let charge = charges.get(cid);
    if (!charge) {
      charge = { id: cid, object: 'charge', amount: pi.amount, amount_refunded: 0, refunded: false, payment_intent: pi.id, currency: pi.currency, status: 'succeeded' };
      charges.set(cid, charge);
    }
    return charge;
  }

  function transferView(tr: Obj): Obj {
    return { ...tr, reversals: list(`/v1/transfers/${tr.id as string}/reversals`, reversals.get(tr.id as string) ?? [], {}) };
  }

  const balance = (account: string) => balances.get(account) ?? 0;
  const credit = (account: string, cents: number) => balances.set(account, balance(account) + cents);

  function positive(form: Record<string, string>, name = 'amount'): number | Answer {
    const value = Number(form[name]);
    if (!Number.isInteger(value) || value <= 0) return error(400, `Invalid positive integer: ${name}`, { code: 'parameter_invalid_integer', saved: false });
    return value;
  }

  function execute(method: string, pathname: string, params: Record<string, string>, headers: IncomingHttpHeaders): Answer {
    const [, resource, rid, sub] = pathname.split('/').filter(Boolean); // ['v1', …]
    const account = headers['stripe-account'] as string | undefined;

    if (resource === 'payment_intents') {
      if (method === 'POST' && !rid) {
        const amount = positive(params);
        if (typeof amount !== 'number') return amount;
        const pi = {
          id: id('pi'),
          object: 'payment_intent',
          amount,
          currency: params.currency,
          status: 'requires_payment_method',
          client_secret: `secret_${n}`,
          latest_charge: null,
          last_payment_error: null,
          transfer_group: params.transfer_group,
          metadata: metadataOf(params),
          created: now(),
        };
        intents.set(pi.id, pi);
        emit('payment_intent.created', pi);
        return ok(pi);
      }
      const pi = rid ? intents.get(rid) : undefined;
      if (!pi) return missing('payment_intent', rid);
      if (method === 'POST' && params.amount) pi.amount = Number(params.amount);
      const expand = Object.entries(params).some(([k, v]) => k.startsWith('expand') && v === 'latest_charge');
      return ok(expand ? { ...pi, latest_charge: chargeOf(pi) } : pi);
    }

    if (resource === 'refunds') {
      if (method === 'GET' && !rid) {
        const all = params.payment_intent ? (refunds.get(params.payment_intent) ?? []) : [...refunds.values()].flat();
        return ok(list('/v1/refunds', all, params));
      }
      if (method !== 'POST' || rid) return error(404, `Unrecognized request URL (${method}: ${pathname})`, { saved: false });
      const pi = intents.get(params.payment_intent ?? '');
      if (!pi) return missing('payment_intent', params.payment_intent);
      const charge = pi.status === 'succeeded' ? chargeOf(pi) : null;
      if (!charge) return error(400, 'This PaymentIntent does not have a successful charge to refund.', { code: 'payment_intent_unexpected_state' });
      const remaining = (charge.amount as number) - (charge.amount_refunded as number);
      const amount = params.amount === undefined ? remaining : positive(params);
      if (typeof amount !== 'number') return amount;
      if (remaining <= 0) return error(400, `Charge ${charge.id as string} has already been refunded.`, { code: 'charge_already_refunded' });
      if (amount > remaining) return error(400, `Refund amount (${amount}) is greater than unrefunded amount on charge (${remaining})`, { code: 'amount_too_large' });
      const refund = {
        id: id('re'),
        object: 'refund',
        amount,
        currency: pi.currency,
        charge: charge.id,
        payment_intent: pi.id,
        status: 'succeeded',
        metadata: metadataOf(params),
        created: now(),
      };
      refunds.set(pi.id as string, [...(refunds.get(pi.id as string) ?? []), refund]);
      charge.amount_refunded = (charge.amount_refunded as number) + amount;
      charge.refunded = charge.amount_refunded === charge.amount;
      emit('charge.refunded', charge);
      return ok(refund);
    }

    if (resource === 'accounts') {
      if (method === 'POST' && !rid) {
        const acct = {
          id: id('acct'),
          object: 'account',
          type: params.type,
          email: params.email,
          charges_enabled: false,
          payouts_enabled: false,
          details_submitted: false,
          capabilities: { card_payments: 'inactive', transfers: 'inactive' },
          requirements: { currently_due: ['external_account', 'individual.dob.day'] },
          metadata: metadataOf(params),
        };
        accounts.set(acct.id, acct);
        return ok(acct);
      }
      const acct = rid ? accounts.get(rid) : undefined;
      if (!acct) return missing('account', rid);
      if (method === 'POST' && sub === 'external_accounts') {
        const iban = params['external_account[account_number]'] ?? '';
        const bank = { id: id('ba'), object: 'bank_account', last4: iban.slice(-4), account: acct.id };
        emit('account.external_account.created', bank, acct.id as string);
        return ok(bank);
      }
      return ok(acct);
    }

    if (resource === 'account_links' && method === 'POST') {
      if (!accounts.has(params.account ?? '')) return missing('account', params.account);
      return ok({ object: 'account_link', url: `https://connect.stripe.test/setup/${params.account}`, expires_at: now() + 300 });
    }

    if (resource === 'transfers') {
      if (method === 'GET' && !rid) {
        const all = [...transfers.values()].filter((t) => !params.transfer_group || t.transfer_group === params.transfer_group);
        return ok(list('/v1/transfers', all.map(transferView), params));
      }
      if (method === 'POST' && !rid) {
        const amount = positive(params);
        if (typeof amount !== 'number') return amount;
        const destination = accounts.get(params.destination ?? '');
        if (!destination) return error(400, `No such destination: '${params.destination}'`, { code: 'resource_missing', saved: false });
        if ((destination.capabilities as Obj | undefined)?.transfers !== 'active') {
          return error(
            400,
            'Your destination account needs to have at least one of the following capabilities enabled: transfers, crypto_transfers, legacy_payments',
            { code: 'insufficient_capabilities_for_transfer' },
          );
        }
        const tr = {
          id: id('tr'),
          object: 'transfer',
          amount,
          amount_reversed: 0,
          reversed: false,
          currency: params.currency,
          destination: params.destination,
          transfer_group: params.transfer_group,
          source_transaction: params.source_transaction ?? null,
          metadata: metadataOf(params),
          created: now(),
        };
        transfers.set(tr.id, tr);
        credit(tr.destination!, amount);
        emit('transfer.created', transferView(tr));
        return ok(transferView(tr));
      }
      const tr = rid ? transfers.get(rid) : undefined;
      if (!tr) return missing('transfer', rid);
      if (sub === 'reversals') {
        const own = reversals.get(tr.id as string) ?? [];
        if (method === 'GET') return ok(list(`/v1/transfers/${tr.id as string}/reversals`, own, params));
        const remaining = (tr.amount as number) - (tr.amount_reversed as number);
        const amount = params.amount === undefined ? remaining : positive(params);
        if (typeof amount !== 'number') return amount;
        if (amount > remaining) return error(400, `Reversal amount (${amount}) is greater than the amount left on the transfer (${remaining})`, { code: 'amount_too_large' });
        const reversal = { id: id('trr'), object: 'transfer_reversal', amount, currency: tr.currency, transfer: tr.id, metadata: metadataOf(params), created: now() };
        reversals.set(tr.id as string, [...own, reversal]);
        tr.amount_reversed = (tr.amount_reversed as number) + amount;
        tr.reversed = tr.amount_reversed === tr.amount;
        credit(tr.destination as string, -amount);
        emit('transfer.reversed', transferView(tr));
        return ok(reversal);
      }
      return ok(transferView(tr));
    }

    if (resource === 'balance' && method === 'GET') {
      return ok({ object: 'balance', available: [{ amount: balance(account ?? ''), currency: 'eur' }], pending: [] });
    }

    if (resource === 'payouts') {
      if (!account) return error(400, 'Payouts of a connected account need its Stripe-Account header', { saved: false });
      const own = payouts.get(account) ?? [];
      if (method === 'GET' && !rid) return ok(list('/v1/payouts', own, params));
      if (method === 'GET') return own.find((p) => p.id === rid) ? ok(own.find((p) => p.id === rid)!) : missing('payout', rid);
      const amount = positive(params);
      if (typeof amount !== 'number') return amount;
      if (amount > balance(account)) {
        return error(400, 'You have insufficient funds in your Stripe account for this transfer.', { code: 'balance_insufficient' });
      }
      credit(account, -amount);
      const payout = { id: id('po'), object: 'payout', amount, currency: params.currency, status: 'pending', metadata: metadataOf(params), created: now() };
      payouts.set(account, [...own, payout]);
      emit('payout.created', payout, account);
      return ok(payout);
    }

    return error(404, `Unrecognized request URL (${method}: ${pathname})`, { saved: false });
  }

  /** The random faults drawn for one request; always three draws, so a seed replays the same sequence. */
  function draw(method: string, pathname: string) {
    const r = [random(), random(), random()] as const;
    const applies = (method === 'POST' || settings.reads === true) && (!settings.paths || settings.paths.some((p) => matches(p, method, pathname)));
    if (!applies) return { error: false, lost: false, slow: false };
    return { error: r[0] < (settings.errorRate ?? 0), lost: r[1] < (settings.lostRate ?? 0), slow: r[2] < (settings.slowRate ?? 0) };
  }

  function send(res: ServerResponse, answer: Answer, extra: Record<string, string> = {}) {
    if (res.destroyed || res.writableEnded) return;
    res.writeHead(answer.status, { 'content-type': 'application/json', 'request-id': `req_${++n}`, ...extra }).end(JSON.stringify(answer.body));
  }

  async function handle(method: string, url: string, body: string, headers: IncomingHttpHeaders, res: ServerResponse) {
    const { pathname, searchParams } = new URL(url, 'http://stripe.test');
    const params = method === 'GET' ? Object.fromEntries(searchParams) : Object.fromEntries(new URLSearchParams(body));
    const key = headers['idempotency-key'] as string | undefined;
    const stripeAccount = headers['stripe-account'] as string | undefined;
    requests.push({ method, path: url, form: params, idempotencyKey: key, stripeAccount, authorization: headers.authorization });
    stats.requests += 1;

    const drawn = draw(method, pathname);
    if (outages.some((o) => o.until > Date.now() && matches(o.pattern, method, pathname))) {
      stats.down += 1;
      return send(res, error(503, 'The service is temporarily unavailable.', { type: 'api_error' }));
    }
    const failNext = fails.findIndex((f) => matches(f.pattern, method, pathname));
    if (drawn.error || failNext >= 0) {
      stats.errors += 1;
      const status = failNext >= 0 ? fails.splice(failNext, 1)[0]!.status : errorsDrawn++ % 2 === 0 ? 500 : 503;
      return send(res, error(status, 'An unknown error occurred.', { type: status === 429 ? 'rate_limit_error' : 'api_error', code: status === 429 ? 'rate_limit' : undefined }));
    }

    // Idempotency keys are scoped to the account the request acts as.
    const scope = key && method === 'POST' ? `${stripeAccount ?? 'platform'} ${key}` : null;
    const fingerprint = `${method} ${pathname} ${new URLSearchParams(Object.entries(params).sort(([a], [b]) => a.localeCompare(b))).toString()}`;
    const previous = scope ? saved.get(scope) : undefined;
    let answer: Answer;
    let replayed = false;
    if (previous && previous.fingerprint !== fingerprint) {
      stats.keyMismatch += 1;
      return send(
        res,
        error(400, `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${key}'.`, {
          type: 'idempotency_error',
          code: 'idempotency_error',
        }),
      );
    }
    if (previous && !previous.answer) {
      stats.keyInUse += 1;
      return send(
        res,
        error(409, 'There is currently another in-progress request using this Idempotent Key. Try again later.', { type: 'idempotency_error', code: 'idempotency_key_in_use' }),
      );
    }
    if (previous?.answer) {
      stats.replayed += 1;
      answer = previous.answer;
      replayed = true;
    } else {
      if (scope) saved.set(scope, { fingerprint, answer: null });
      const hang = hangs.findIndex((h) => matches(h.pattern, method, pathname));
      if (hang >= 0) {
        stats.hung += 1;
        await sleep(hangs.splice(hang, 1)[0]!.ms);
      }
      const failure = failures.findIndex((f) => f.path === `${method} ${pathname.split('/').filter(Boolean).join('/')}`);
      const savedFailure = savedFailures.findIndex((p) => matches(p, method, pathname));
      if (savedFailure >= 0) savedFailures.splice(savedFailure, 1);
      answer =
        failure >= 0
          ? { ...failures.splice(failure, 1)[0]!, saved: false }
          : savedFailure >= 0
            ? { ...error(500, 'An unknown error occurred while processing the request.', { type: 'api_error' }), shouldRetry: false }
            : execute(method, pathname, params, headers);
      if (answer.saved !== false) stats.executed += 1;
      if (scope) {
        if (answer.saved === false) saved.delete(scope);
        else saved.set(scope, { fingerprint, answer });
      }
    }

    const loseNext = losses.findIndex((p) => matches(p, method, pathname));
    if (loseNext >= 0) losses.splice(loseNext, 1);
    if (drawn.lost || loseNext >= 0) {
      stats.lost += 1;
      res.socket?.destroy();
      return;
    }
    if (drawn.slow) {
      stats.slow += 1;
      await sleep(settings.slowMs ?? 1_000);
    }
    send(res, answer, {
      ...(key ? { 'idempotency-key': key } : {}),
      ...(replayed ? { 'idempotent-replayed': 'true' } : {}),
      ...(answer.shouldRetry === false ? { 'stripe-should-retry': 'false' } : {}),
    });
  }

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      handle(req.method!, req.url!, Buffer.concat(chunks).toString('utf8'), req.headers, res).catch((cause: unknown) => {
        send(res, error(500, cause instanceof Error ? cause.message : 'server error', { type: 'api_error' }));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };

  const signer = new Stripe('sk_test_signer', { telemetry: false });

  return {
    port,
    requests,
    intents,
    charges,
    refunds,
    accounts,
    transfers,
    reversals,
    payouts,
    balances,
    failures,
    faults,
    /** Stripe-shaped events of every state change, oldest first, until delivered. */
    events,

    /** Onboarding finished: charges and payouts enabled, capabilities active, nothing due; emits account.updated. */
    enableAccount(accountId: string) {
      const acct = accounts.get(accountId);
      if (!acct) throw new Error(`no account ${accountId}`);
      Object.assign(acct, {
        charges_enabled: true,
        payouts_enabled: true,
        details_submitted: true,
        capabilities: { card_payments: 'active', transfers: 'active' },
        requirements: { currently_due: [] },
      });
      emit('account.updated', acct, accountId);
      return acct;
    },

    /** The card confirms the intent: status succeeded with a charge; emits payment_intent.succeeded. */
    succeedIntent(intentId: string) {
      const pi = intents.get(intentId);
      if (!pi) throw new Error(`no intent ${intentId}`);
      const chargeId = id('ch');
      Object.assign(pi, { status: 'succeeded', latest_charge: chargeId, amount_received: pi.amount, last_payment_error: null });
      chargeOf(pi);
      emit('payment_intent.succeeded', pi);
      return pi;
    },

    /** The card is declined; emits payment_intent.payment_failed. */
    failIntent(intentId: string) {
      const pi = intents.get(intentId);
      if (!pi) throw new Error(`no intent ${intentId}`);
      Object.assign(pi, { status: 'requires_payment_method', last_payment_error: { type: 'card_error', code: 'card_declined', message: 'Your card was declined.' } });
      emit('payment_intent.payment_failed', pi);
      return pi;
    },

    /** The bank answers the pending payouts: `paid` (payout.paid) or `failed` (payout.failed, the money back on the balance). */
    settlePayouts(outcome: 'paid' | 'failed' = 'paid') {
      let settled = 0;
      for (const [account, own] of payouts) {
        for (const payout of own) {
          if (payout.status !== 'pending' && payout.status !== 'in_transit') continue;
          payout.status = outcome;
          if (outcome === 'failed') credit(account, payout.amount as number);
          emit(`payout.${outcome}`, payout, account);
          settled += 1;
        }
      }
      return settled;
    },

    /**
     * Signs the pending events with Stripe's test header helper and posts them as Stripe would:
     * some twice (`duplicate`), out of order (`shuffle`), late and crossed (`delayMs`). Answers what
     * each post returned.
     */
    async deliverEvents(post: (payload: string, signature: string) => Promise<unknown>, opts: DeliveryOptions = {}) {
      const rand = seeded(opts.seed ?? 1);
      const taken = events.splice(0, events.length);
      const queue = taken.flatMap((event) => (rand() < (opts.duplicate ?? 0) ? [event, event] : [event]));
      if (opts.shuffle) {
        for (let i = queue.length - 1; i > 0; i--) {
          const j = Math.floor(rand() * (i + 1));
          [queue[i], queue[j]] = [queue[j]!, queue[i]!];
        }
      }
      const deliver = async (event: Obj) => {
        const payload = JSON.stringify(event);
        // Each attempt is signed when it is sent, as Stripe signs its retries.
        const signature = signer.webhooks.generateTestHeaderString({ payload, secret: opts.secret ?? WEBHOOK_SECRET });
        return { event: event.id as string, type: event.type as string, result: await post(payload, signature) };
      };
      if (!opts.delayMs) {
        const results = [];
        for (const event of queue) results.push(await deliver(event));
        return results;
      }
      const delays = queue.map(() => Math.floor(rand() * opts.delayMs!));
      return Promise.all(
        queue.map(async (event, i) => {
          await sleep(delays[i]!);
          return deliver(event);
        }),
      );
    },

    /** The processor's view of the money, in cents. */
    ledgerView(): StripeLedgerView {
      const view: StripeLedgerView = { intents: {}, transferGroups: {}, accounts: {} };
      const accountView = (acct: string) =>
        (view.accounts[acct] ??= { transferred: 0, reversed: 0, paidOut: 0, pendingPayouts: 0, balance: balance(acct) });
      for (const pi of intents.values()) {
        const charge = pi.status === 'succeeded' ? chargeOf(pi) : null;
        view.intents[pi.id as string] = {
          status: pi.status as string,
          amount: pi.amount as number,
          captured: charge ? (charge.amount as number) : 0,
          refunded: charge ? (charge.amount_refunded as number) : 0,
        };
      }
      for (const tr of transfers.values()) {
        const group = (view.transferGroups[(tr.transfer_group as string) ?? ''] ??= { transferred: 0, reversed: 0 });
        group.transferred += tr.amount as number;
        group.reversed += tr.amount_reversed as number;
        const acct = accountView(tr.destination as string);
        acct.transferred += tr.amount as number;
        acct.reversed += tr.amount_reversed as number;
      }
      for (const [acct, own] of payouts) {
        const a = accountView(acct);
        for (const p of own) {
          if (p.status === 'paid') a.paidOut += p.amount as number;
          if (p.status === 'pending' || p.status === 'in_transit') a.pendingPayouts += p.amount as number;
        }
      }
      for (const acct of balances.keys()) accountView(acct);
      return view;
    },

    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export type StripeServer = Awaited<ReturnType<typeof startStripeServer>>;
