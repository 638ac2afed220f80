import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.js';
import type { DbTx } from '../db/index.js';
import { createMailer, type Mailer } from '../integrations/mail/index.js';
import { type AlertEvaluator, createAlertEvaluator, type WebhookGuard } from '../modules/alerts/index.js';
import type { LogEvents } from '../modules/logs/index.js';
import { createAlertWorker, type AlertWorker } from './alert-worker.js';

export interface Alerting {
  evaluator: AlertEvaluator;
  worker: AlertWorker;
  mailer: Mailer;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Background alerting, exposed for the app's lifecycle and for tests that drive the worker. */
    alerting: Alerting;
  }
}

/**
 * Evaluates alerts on the log bus and delivers them in the background: the worker starts when the
 * app is ready (unless disabled by configuration, as in tests) and both stop before the database
 * closes, after the evaluations and the sends in flight.
 */
export function registerAlerting(
  app: FastifyInstance,
  deps: { config: Readonly<Config>; db: DbTx; events: LogEvents; webhookGuard: WebhookGuard },
) {
  const { config, db, events, webhookGuard } = deps;
  const mailer = createMailer({ ...config.mail, production: config.env === 'production' }, app.log);
  const evaluator = createAlertEvaluator({ db, log: app.log });
  const worker = createAlertWorker({
    db,
    mailer,
    log: app.log,
    intervalMs: config.alerts.workerIntervalMs,
    maxAttempts: config.alerts.maxAttempts,
    webhookTimeoutMs: config.alerts.webhookTimeoutMs,
    webhookGuard,
    metrics: app.metrics,
  });
  const unsubscribe = events.subscribeAll(evaluator.onLevels);

  app.decorate('alerting', { evaluator, worker, mailer });
  app.addHook('onReady', async () => {
    if (config.alerts.workerEnabled) worker.start();
  });
  // Root onClose hooks run last-added first: these run before the database (opened earlier) closes.
  app.addHook('onClose', async () => {
    unsubscribe();
    await evaluator.stop();
    await worker.stop();
    await mailer.close();
    await webhookGuard.close();
  });
}
