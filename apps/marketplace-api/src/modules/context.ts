import type { CounterSource, LoginThrottle } from '@repo/auth';
import type { DatabaseHandle } from '@repo/db';
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import type { Agent } from 'node:https';
import type { Config } from '../config.js';
import type { Db, Schema } from '../db/index.js';
import type { Mailer } from '../integrations/mail/mailer.js';
import type { PaymentProcessor } from '../integrations/payments/index.js';
import type { Storage } from '../integrations/storage/storage.js';
import type { Clock } from '../lib/time.js';
import type { ActivityRecorder } from './activity-log/index.js';
import type { Outbox, OutboxConsumer } from './outbox/index.js';
import type { SettingsService } from './settings/index.js';
import type { UsersService } from './user-store/index.js';

/** What the app hands the modules (app.ts builds these once). */
export interface ModuleDeps {
  config: Readonly<Config>;
  database: DatabaseHandle<Schema>;
  db: Db;
  users: UsersService;
  /** The one writer of the activity log. */
  recorder: ActivityRecorder;
  /** The one writer of domain events: every state move publishes through it, in its own transaction. */
  outbox: Outbox;
  mailer: Mailer;
  storage: Storage;
  throttle: LoginThrottle;
  /** Counters every instance shares (RATE_LIMIT_STORE), for the e-mail send limits; in memory when absent. */
  counters?: CounterSource;
  /** The payment processor (tests pass the built-in one they drive); built from the config otherwise. */
  paymentProcessor?: PaymentProcessor;
  /** The HTTPS agent of web push (tests trust their local push service with it). */
  pushAgent?: Agent;
}

/**
 * What every module is built from: the app's parts and the platform-wide services made once for
 * all (modules/index.ts). A module that reacts to domain events adds its consumer to `consumers`.
 */
export interface ModuleContext extends ModuleDeps {
  app: FastifyInstance;
  /** The platform settings, one instance: the modules whose rules depend on them take it. */
  settings: SettingsService;
  /** The platform's calendar: "today" for expiry dates and ages (PLATFORM_TIME_ZONE). */
  clock: Clock;
  /** The readers of the outbox; app.ts delivers the outbox to them on a timer. */
  consumers: OutboxConsumer[];
}

/** A module, built: its routes (mounted under `/api/v1`) and the services others use. */
export interface Mounted {
  routes: FastifyPluginAsync;
}
