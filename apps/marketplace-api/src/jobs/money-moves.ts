import type { FastifyInstance } from 'fastify';
import type { PaymentsService, Reconciliation } from '../modules/payments/index.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Drives the due money moves now (tests, and the timer below); `refreshAccounts` re-reads accounts whose shares wait. */
    moneyMoves: { drain(opts?: { refreshAccounts?: boolean }): Promise<number> };
  }
}

/** How often the worker re-reads the connected accounts whose shares wait for them (an `account.updated` lost). */
const ACCOUNT_REFRESH_MS = 5 * 60_000;

/**
 * The money moves' worker (DESIGN.md §11): every `intervalMs` (0: only when asked) it drives the moves
 * that wait, retry, or were left executing by an instance that vanished, so that a refund, transfer,
 * reversal or payout completes without anyone calling again. Several instances may run it: each move
 * is claimed by one.
 */
export function registerMoneyMoves(
  app: FastifyInstance,
  deps: { payments: PaymentsService; reconciliation: Reconciliation; intervalMs: number; reconciliationIntervalMinutes: number },
) {
  let running: Promise<number> | undefined;
  let lastRefresh = 0;
  const drain = (opts: { refreshAccounts?: boolean } = {}) => {
    running ??= app.metrics
      .job('money_moves', () => deps.payments.drainMoves(opts))
      .finally(() => {
        running = undefined;
      });
    return running;
  };
  app.decorate('moneyMoves', { drain });
  app.metrics.gauge({
    name: 'payments_money_moves_pending',
    help: 'Money moves the payment processor has not answered for good yet (pending, executing or retrying)',
    async collect() {
      try {
        this.set((await deps.payments.moveStats()).count);
      } catch (error) {
        app.log.warn({ err: error }, 'money moves unavailable for the metrics');
      }
    },
  });

  app.metrics.gauge({
    name: 'payments_unreconciled_total',
    help: 'Differences between the ledger and the payment processor that the last reconciliation found and a later one has not cleared',
    async collect() {
      try {
        this.set(await deps.reconciliation.countOpen());
      } catch (error) {
        app.log.warn({ err: error }, 'reconciliation unavailable for the metrics');
      }
    },
  });

  // The reconciliation, every `reconciliationIntervalMinutes` (each instance; a run only reads the
  // processor and records what it found, so two at once find the same).
  let reconciling: NodeJS.Timeout | undefined;
  let reconcileRun: Promise<unknown> | undefined;
  const reconcileMs = deps.reconciliationIntervalMinutes * 60_000;
  const reconcile = () => {
    reconcileRun = app.metrics
      .job('reconciliation', () => deps.reconciliation.run())
      .then((r) => (r.open > 0 ? app.log.warn({ open: r.open, found: r.differences.length }, 'payments unreconciled') : undefined))
      .catch((error: unknown) => app.log.error({ err: error }, 'reconciliation failed'))
      .finally(() => {
        if (!stopped) {
          reconciling = setTimeout(reconcile, reconcileMs);
          reconciling.unref();
        }
      });
  };
  if (reconcileMs > 0) {
    app.addHook('onReady', async () => {
      reconciling = setTimeout(reconcile, reconcileMs);
      reconciling.unref();
    });
  }

  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const tick = () => {
    const refreshAccounts = Date.now() - lastRefresh >= ACCOUNT_REFRESH_MS;
    if (refreshAccounts) lastRefresh = Date.now();
    drain({ refreshAccounts })
      .catch((error: unknown) => app.log.error({ err: error }, 'money moves failed'))
      .finally(() => {
        if (!stopped) {
          timer = setTimeout(tick, deps.intervalMs);
          timer.unref();
        }
      });
  };
  if (deps.intervalMs > 0) app.addHook('onReady', async () => tick());
  // preClose: a move being settled finishes on the open database.
  app.addHook('preClose', async () => {
    stopped = true;
    if (timer) clearTimeout(timer);
    if (reconciling) clearTimeout(reconciling);
    await running?.catch(() => undefined);
    await reconcileRun?.catch(() => undefined);
    await deps.payments.idle();
  });
}
