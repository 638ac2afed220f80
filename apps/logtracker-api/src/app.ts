import websocket from '@fastify/websocket';
import type { FastifyInstance } from 'fastify';
import { authPlugin, createLoginThrottle, createSessionStore, openSharedCounters, setPasswordHashCost, type LoginThrottle } from '@repo/auth';
import { createDatabase, createFanout, createIdempotencyStore, type DatabaseHandle, type DatabaseOptions } from '@repo/db';
import { createServer, idempotencyPlugin, metricsPlugin, registerFoundation, type ServerOptions } from '@repo/http';
import type { Config } from './config.js';
import { migrationsFolder, schema, type Schema } from './db/index.js';
import { registerAlerting } from './jobs/alerting.js';
import { registerLogStatistics, type LogStatisticsTiming } from './jobs/log-statistics.js';
import { registerMaintenance } from './jobs/maintenance.js';
import { registerRetention } from './jobs/retention.js';
import { createWebhookGuard, type ResolveHost, type WebhookGuard } from './modules/alerts/index.js';
import { accountSessions } from './modules/auth/index.js';
import { createIngestKeysService } from './modules/ingest-keys/index.js';
import { createLogEvents, type LogEvents } from './modules/logs/index.js';
import { createProjectAccess } from './modules/projects/index.js';
import { registerModules, VERSION } from './modules/index.js';

export interface AppOverrides {
  /** A database the caller owns (tests); otherwise one is opened from the config and closed with the app. */
  database?: DatabaseHandle<Schema>;
  logger?: ServerOptions['logger'];
  /** Told of each route as it is declared (the route table's test and script); unset otherwise. */
  onRoute?: ServerOptions['onRoute'];
  throttle?: LoginThrottle;
  /** How webhook host names are resolved (tests answer from a table instead of DNS). */
  resolveHost?: ResolveHost;
  /** When the statistics keeper merges the search index's pending lists (tests shorten it). */
  logStatisticsTiming?: Partial<LogStatisticsTiming>;
}

/**
 * Opens the configured database and, unless `MIGRATE_ON_START=false` (a migration Job runs before
 * the rollout instead), brings its schema up to date; `migrate` overrides the setting (the migrate CLI).
 * On a server it first waits for a writable primary (a failover under way), telling `onWaiting` of
 * each attempt, for DATABASE_STARTUP_TIMEOUT_SECONDS at most.
 */
export function openDatabase(config: Readonly<Config>, options: { migrate?: boolean; onWaiting?: DatabaseOptions<Schema>['onWaiting'] } = {}) {
  return createDatabase({
    ...config.database,
    schema,
    migrationsFolder,
    extensions: ['pg_trgm', 'btree_gin'],
    migrate: options.migrate ?? config.migrateOnStart,
    onWaiting: options.onWaiting,
    // The logs' queries are planned for their values (filters, search words, ranges): see modules/index.ts.
    customPlanPoolSize: config.database.poolSize,
    // The others (accounts, projects, members, keys; a page of logs unbounded in time) keep one
    // plan per connection.
    genericPlans: true,
  });
}

/** Builds the log tracker; never listens, so tests drive it with `inject`. */
export async function buildApp(config: Readonly<Config>, overrides: AppOverrides = {}) {
  const app = createServer({
    logLevel: config.logLevel,
    trustProxy: config.trustProxy,
    logger: overrides.logger,
    onRoute: overrides.onRoute,
  });

  setPasswordHashCost(config.auth.passwordHashCost);
  const database = overrides.database ?? (await openDatabase(config, { onWaiting: (attempt) => app.log.warn(attempt, 'database: no writable primary yet, waiting') }));
  if (!overrides.database) app.addHook('onClose', () => database.close());
  // Prometheus metrics (/metrics, or METRICS_PORT): before the routes, whose latency it times.
  await app.register(metricsPlugin, { ...config.metrics, host: config.host, pools: database.poolStats });

  await app.register(authPlugin, {
    secret: config.auth.jwtSecret,
    store: createSessionStore({ db: database.db, sessions: accountSessions, ttlDays: config.auth.tokenTtlDays }),
  });
  const access = createProjectAccess({ db: database.db });
  const ingestKeys = createIngestKeysService({ db: database.db, access });
  // A live tail on one instance hears the logs stored through any other (LISTEN/NOTIFY).
  const tailFanout = createFanout(database, {
    channel: 'log_tail',
    onError: (error) => app.log.warn({ err: error }, 'live tail fan-out: logs not delivered'),
  });
  app.addHook('onReady', () => tailFanout.start());
  app.addHook('onClose', () => tailFanout.close());
  const events = createLogEvents((error) => app.log.error({ err: error }, 'log listener failed'), tailFanout);
  const webhookGuard = createWebhookGuard({ allowPrivateNetworks: config.alerts.allowPrivateNetworks, resolve: overrides.resolveHost });
  // Several instances: request counts and the login throttle live where every instance sees them
  // (RATE_LIMIT_STORE: Redis, this database, or each process's memory).
  const shared = openSharedCounters(app, { store: config.rateLimit.store, redisUrl: config.rateLimit.redisUrl, db: database.db });

  await registerFoundation(app, {
    cors: config.cors,
    rateLimit: {
      ...config.rateLimit,
      countHit: shared.countHit,
      identify: (request) => app.auth.peekSubject(request),
      // On the routes that take ingest keys, a key verified lately has a budget of its own, keyed
      // by its hash so no one can spend another's.
      tier: (request) => ingestKeys.rateLimitTier(request, config.ingestRateLimit),
    },
    docs: { ...API_DOCUMENT, version: VERSION, enabled: config.docsEnabled },
  });
  // Idempotency-Key on every authenticated POST and PATCH (DESIGN.md §10): before the routes, whose
  // options it reads. The caller is an ingest key (log submission, OTLP) or the signed-in user; a
  // user's membership of the project is checked again before an answer is replayed (a key is
  // bound to its project). Expired keys are deleted every ten minutes.
  await app.register(idempotencyPlugin, {
    store: createIdempotencyStore(database.db),
    ttlHours: config.idempotencyKeyTtlHours,
    scope: (request) => {
      if (request.ingestPrincipal) return `ingest:${request.ingestPrincipal.keyId}`;
      return request.actor ? `user:${request.actor.userId}` : undefined;
    },
    beforeReplay: async (request) => {
      const projectId = Number((request.params as { project_id?: unknown } | undefined)?.project_id);
      if (request.actor && Number.isInteger(projectId)) await access.assertMember(request.actor, projectId);
    },
  });
  // Before the routes: its onRoute hook turns `wsHandler` routes into WebSocket endpoints. Clients
  // of the live tail only listen, so what they may send is kept small.
  await app.register(websocket, { options: { maxPayload: 4096 } });
  await registerModules(app, {
    config,
    database,
    throttle: overrides.throttle ?? createLoginThrottle({ counters: shared.counters }),
    access,
    events,
    ingestKeys,
    webhookGuard,
  });
  registerJobs(app, config, { database, events, webhookGuard, logStatisticsTiming: overrides.logStatisticsTiming });
  return app;
}

/** The OpenAPI document's title, description, tags and the ingest key's scheme (served at /docs). */
const API_DOCUMENT = {
  title: 'Log Tracker API',
  description: 'Collects application logs per project, filters, searches and analyses them.',
  prefix: '/docs',
  tags: [
    { name: 'auth', description: 'Accounts and sessions' },
    { name: 'projects', description: 'Projects and their members' },
    { name: 'logs', description: 'Submitting and reading logs' },
    { name: 'stats', description: 'Statistics' },
    { name: 'config', description: 'Per-project configuration' },
    { name: 'alerts', description: 'Alerts raised by log thresholds and their deliveries' },
    { name: 'analysis', description: 'Log patterns, anomalies and error-rate changes mined from a range' },
    { name: 'ingest keys', description: 'Ingest-only credentials for CI pipelines' },
    { name: 'otlp', description: 'OpenTelemetry logs receiver' },
    { name: 'health', description: 'Health' },
  ],
  securitySchemes: {
    ingestKey: { type: 'apiKey' as const, in: 'header' as const, name: 'X-Ingest-Key', description: 'A project ingest key (`ltk_…`); also accepted as a bearer token' },
  },
};

/** The jobs: alerting; retention and maintenance on one instance at a time (an advisory lock: database.exclusive); statistics. */
function registerJobs(
  app: FastifyInstance,
  config: Readonly<Config>,
  {
    database,
    events,
    webhookGuard,
    logStatisticsTiming,
  }: { database: DatabaseHandle<Schema>; events: LogEvents; webhookGuard: WebhookGuard; logStatisticsTiming?: Partial<LogStatisticsTiming> },
) {
  registerAlerting(app, { config, db: database.customPlanDb, events, webhookGuard });
  registerRetention(app, { config, db: database.customPlanDb, exclusive: database.exclusive });
  const maintenance = registerMaintenance(app, { config, db: database.customPlanDb, exclusive: database.exclusive });
  // Where maintenance runs, the rollups' fresh rows are also merged after ingest: lists and
  // statistics then read compacted rollups.
  const compactRollups = config.maintenanceIntervalSeconds > 0 ? () => maintenance.mergeFreshRollups() : undefined;
  registerLogStatistics(app, { db: database.customPlanDb, events, compactRollups, timing: logStatisticsTiming });
}
