import multipart from '@fastify/multipart';
import type { Agent } from 'node:https';
import websocket from '@fastify/websocket';
import type { FastifyInstance } from 'fastify';
import { authPlugin, createLoginThrottle, createSessionStore, openSharedCounters, setPasswordHashCost, type LoginThrottle } from '@repo/auth';
import { createDatabase, createIdempotencyStore, type DatabaseHandle, type DatabaseOptions } from '@repo/db';
import { AppError, createServer, idempotencyPlugin, metricsPlugin, registerFoundation, type ServerOptions } from '@repo/http';
import type { Config } from './config.js';
import { extensions, migrationsFolder, schema, type Db, type Schema } from './db/index.js';
import { seedReferenceData } from './db/seed/index.js';
import { createMailer, type Mailer } from './integrations/mail/mailer.js';
import type { PaymentProcessor } from './integrations/payments/index.js';
import { createLocalStorage } from './integrations/storage/storage.js';
import { registerLifecycleTimers } from './jobs/scheduler.js';
import { registerBroadcastDelivery } from './jobs/broadcasts.js';
import { systemActor } from './lib/context.js';
import { createActivityRecorder } from './modules/activity-log/index.js';
import { createOutbox } from './modules/outbox/index.js';
import { accountSessions, createUsersService } from './modules/user-store/index.js';
import { registerMoneyMoves } from './jobs/money-moves.js';
import { registerOutboxDispatch } from './jobs/outbox-dispatch.js';
import { registerModules, VERSION } from './modules/index.js';

export { VERSION };

export interface AppOverrides {
  /** A database the caller owns (tests); otherwise one is opened from the config and closed with the app. */
  database?: DatabaseHandle<Schema>;
  logger?: ServerOptions['logger'];
  /** Told of each route as it is declared (the route table's test and script); unset otherwise. */
  onRoute?: ServerOptions['onRoute'];
  throttle?: LoginThrottle;
  /** The payment processor; from the configuration otherwise (Stripe or the built-in one). */
  paymentProcessor?: PaymentProcessor;
  /** The HTTPS agent web push posts with (tests: one that trusts their local push service). */
  pushAgent?: Agent;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The outgoing mail queue; tests wait on `mailer.idle()`. */
    mailer: Mailer;
  }
}

/**
 * Opens the configured database and, unless `MIGRATE_ON_START=false` (a migration Job runs before
 * the rollout instead), brings its schema up to date; `migrate` overrides the setting (the migrate CLI).
 * On a server it first waits for a writable primary (a failover under way), telling `onWaiting` of
 * each attempt, for DATABASE_STARTUP_TIMEOUT_SECONDS at most.
 */
export function openDatabase(config: Readonly<Config>, options: { migrate?: boolean; onWaiting?: DatabaseOptions<Schema>['onWaiting'] } = {}) {
  return createDatabase({ ...config.database, schema, migrationsFolder, extensions, migrate: options.migrate ?? config.migrateOnStart, onWaiting: options.onWaiting });
}

/** Builds the marketplace; never listens, so tests drive it with `inject`. */
export async function buildApp(config: Readonly<Config>, overrides: AppOverrides = {}) {
  const app = createServer({ logLevel: config.logLevel, trustProxy: config.trustProxy, logger: overrides.logger, onRoute: overrides.onRoute });

  setPasswordHashCost(config.auth.passwordHashCost);
  const database = overrides.database ?? (await openDatabase(config, { onWaiting: (attempt) => app.log.warn(attempt, 'database: no writable primary yet, waiting') }));
  const { db } = database;
  // Prometheus metrics (/metrics, or METRICS_PORT): before the routes, whose latency it times.
  await app.register(metricsPlugin, { ...config.metrics, host: config.host, pools: database.poolStats });

  const storage = await createLocalStorage(config.storage.dir);
  const mailer = createMailer({ db, log: app.log, smtpUrl: config.mail.smtpUrl, from: config.mail.from, production: config.env === 'production' });
  app.decorate('mailer', mailer);
  // Queued e-mails are recorded before the database closes.
  app.addHook('onClose', async () => {
    await mailer.close();
    await storage.dispose();
    if (!overrides.database) await database.close();
  });

  await app.register(authPlugin, {
    secret: config.auth.jwtSecret,
    store: createSessionStore({ db, sessions: accountSessions, ttlDays: config.auth.tokenTtlDays }),
  });

  // Several instances: request counts, the login throttle and the e-mail send limits live where
  // every instance sees them (RATE_LIMIT_STORE: Redis, this database, or each process's memory).
  const shared = openSharedCounters(app, { store: config.rateLimit.store, redisUrl: config.rateLimit.redisUrl, db });

  await registerFoundation(app, {
    cors: config.cors,
    rateLimit: {
      ...config.rateLimit,
      identify: (request) => app.auth.peekSubject(request),
      countHit: shared.countHit,
    },
    docs: { ...API_DOCUMENT, version: VERSION, enabled: config.docsEnabled },
  });
  await registerUploads(app, config);

  // Idempotency-Key on every authenticated POST and PATCH (DESIGN.md §10): before the routes, whose
  // options it reads. The caller is the signed-in user; expired keys are deleted every ten minutes.
  await app.register(idempotencyPlugin, {
    store: createIdempotencyStore(db),
    ttlHours: config.idempotencyKeyTtlHours,
    scope: (request) => (request.actor ? `user:${request.actor.userId}` : undefined),
  });

  // Before the routes: its onRoute hook turns `wsHandler` routes into WebSocket endpoints. Pusher
  // limits what a client sends to 10 KB a message.
  await app.register(websocket, { options: { maxPayload: 10 * 1024 } });
  // Built once: every service that records, publishes or manages accounts gets these same three.
  const recorder = createActivityRecorder({ db });
  // The one writer of domain events: every state move publishes through it, in its own transaction.
  const outbox = createOutbox({ db });
  const users = createUsersService({ db, recorder, outbox });
  const modules = await registerModules(app, {
    config,
    database,
    db,
    users,
    recorder,
    outbox,
    mailer,
    storage,
    throttle: overrides.throttle ?? createLoginThrottle({ counters: shared.counters }),
    counters: shared.counters,
    paymentProcessor: overrides.paymentProcessor,
    pushAgent: overrides.pushAgent,
  });
  registerJobs(app, config, { db, ...modules });

  if (config.seedReferenceData) {
    const seeded = await seedReferenceData(db);
    if (seeded.categories + seeded.services + seeded.cities > 0) app.log.info(seeded, 'reference data seeded');
  }
  if (config.bootstrapAdmin) {
    const { created } = await users.ensureBootstrapAdmin(systemActor, config.bootstrapAdmin);
    if (created) app.log.info({ email: config.bootstrapAdmin.email }, 'bootstrap administrator created');
  }
  return app;
}

/** The OpenAPI document's title, description and tags (served at /docs). */
const API_DOCUMENT = {
  title: 'Automotive Services Marketplace API',
  description: 'Vehicle owners post service requests, providers send offers, appointments, payments, reviews and conversations.',
  prefix: '/docs',
  tags: [
    { name: 'auth', description: 'Registration, sign-in, e-mail verification and password reset' },
    { name: 'account', description: 'The signed-in user: profile, photo, devices, language, deletion' },
    { name: 'catalogue', description: 'Service categories, services and cities' },
    { name: 'prestataires', description: 'Searching and showing prestataires, favourites' },
    { name: 'prestataire', description: "A prestataire's own workspace: profile and documents" },
    { name: 'client', description: "A client's own workspace" },
    { name: 'vehicles', description: "A client's garage, and identifying vehicles by plate or VIN" },
    { name: 'service-requests', description: 'Service requests: asking for a service on a vehicle, its photos' },
    { name: 'payments', description: 'Paying appointments, the processor webhook, invoices' },
    { name: 'offers', description: "Prestataires' quotes on service requests; accepting one books the appointment" },
    { name: 'conversations', description: 'Messages between a client and a prestataire, read receipts, typing, disputes' },
    { name: 'notifications', description: "The signed-in user's inbox, filled from the marketplace's events (and pushed to its browsers)" },
    { name: 'repairdata', description: 'Vehicle technical data: profiles, repair tasks, labour times, procedures' },
    { name: 'admin', description: 'Back office: users, admins, validation, compliance, activity log' },
    { name: 'appointments', description: 'Appointments: rescheduling, cancellation, start, end, completion, price adjustments' },
    { name: 'media', description: 'Public photos' },
    { name: 'realtime', description: 'Real-time: the Pusher-protocol WebSocket and its channel authorisation' },
    { name: 'health', description: 'Health' },
  ],
};

/**
 * Multipart uploads, with their limits. The multipart parser is the whole app's: a route that takes
 * no upload would read a multipart request as an empty body. It is a wrong content type there (the
 * parser has only recognised it, nothing of the body is read).
 */
async function registerUploads(app: FastifyInstance, config: Readonly<Config>) {
  await app.register(multipart, {
    limits: { fileSize: config.storage.maxUploadBytes, files: 10, fields: 30, fieldSize: 64 * 1024, parts: 40 },
  });
  app.addHook('preValidation', (request, _reply, done) => {
    const consumes = (request.routeOptions.schema as { consumes?: string[] } | undefined)?.consumes;
    if (request.isMultipart() && !consumes?.includes('multipart/form-data')) {
      return done(new AppError('bad_request', 'Unsupported content type; send application/json'));
    }
    done();
  });
}

/** The jobs every instance runs on timers: the outbox's delivery, the lifecycle timers, the money moves, the broadcasts. */
function registerJobs(app: FastifyInstance, config: Readonly<Config>, parts: { db: Db } & Awaited<ReturnType<typeof registerModules>>) {
  const { db, outboxConsumers, lifecycleTimers, broadcasts, payments, reconciliation } = parts;
  registerOutboxDispatch(app, { db, consumers: outboxConsumers, intervalMs: config.outboxIntervalMs });
  registerLifecycleTimers(app, { timers: lifecycleTimers, intervalSeconds: config.lifecycleTimersIntervalSeconds });
  registerMoneyMoves(app, { payments, reconciliation, intervalMs: config.moneyMovesIntervalMs, reconciliationIntervalMinutes: config.reconciliationIntervalMinutes });
  registerBroadcastDelivery(app, { broadcasts, intervalMs: config.broadcasts.intervalMs });
}
