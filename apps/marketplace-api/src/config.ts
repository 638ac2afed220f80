import { createHmac } from 'node:crypto';
import { join } from 'node:path';
import { buildCommonConfig, commonEnvShape, ConfigError, env, parseEnv, type CommonConfig } from '@repo/config';
import { z } from 'zod';
import { isTimeZone } from './lib/time.js';

const httpUrl = z.url({ protocol: /^https?$/ });

const schema = z.object({
  ...commonEnvShape,
  PORT: env.port(8000),
  // false: the app starts on the schema as it is; a migration Job (`node dist/cli/migrate.js`) runs first.
  MIGRATE_ON_START: env.bool.default(true),
  // Where links in e-mails point (the web or app front end that calls the API).
  APP_URL: httpUrl.default('http://localhost:3000'),
  SMTP_URL: z.string().regex(/^smtps?:\/\//, 'must be an smtp:// or smtps:// URL').optional(),
  MAIL_FROM: z.string().min(1).default('Marketplace <no-reply@marketplace.local>'),
  GOOGLE_CLIENT_IDS: env.csv.default([]),
  GOOGLE_JWKS_URL: httpUrl.default('https://www.googleapis.com/oauth2/v3/certs'),
  APPLE_CLIENT_IDS: env.csv.default([]),
  APPLE_JWKS_URL: httpUrl.default('https://appleid.apple.com/auth/keys'),
  BOOTSTRAP_ADMIN_EMAIL: z.string().trim().toLowerCase().pipe(z.email()).optional(),
  BOOTSTRAP_ADMIN_PASSWORD: z.string().min(8, 'must be at least 8 characters').optional(),
  STORAGE_DIR: z.string().min(1).optional(),
  UPLOAD_MAX_BYTES: env.positiveInt(10 * 1024 * 1024),
  // Catalogue and cities at start-up; unset means on, except under NODE_ENV=test where a test asks for it.
  SEED_REFERENCE_DATA: env.bool.optional(),
  // The repair-data vendor; without REPAIRDATA_URL the bundled dataset answers.
  REPAIRDATA_URL: httpUrl.optional(),
  REPAIRDATA_API_KEY: z.string().min(1).optional(),
  REPAIRDATA_TIMEOUT_MS: env.positiveInt(5000),
  REPAIRDATA_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(10).default(3),
  REPAIRDATA_RETRY_BASE_MS: env.positiveInt(200),
  REPAIRDATA_CACHE_TTL_HOURS: env.positiveInt(24 * 30),
  REPAIRDATA_CIRCUIT_FAILURES: env.positiveInt(5),
  REPAIRDATA_CIRCUIT_OPEN_SECONDS: env.positiveInt(30),
  // An OpenAI-compatible chat API for suggestions and estimate explanations; built-in methods without it.
  AI_API_URL: httpUrl.optional(),
  AI_API_KEY: z.string().min(1).optional(),
  AI_MODEL: z.string().min(1).default('gpt-4o-mini'),
  AI_TIMEOUT_MS: env.positiveInt(15_000),
  AI_CACHE_TTL_HOURS: env.positiveInt(24 * 7),
  // The zone whose calendar says what "today" is (document expiry, age checks): French certificates
  // carry Paris dates.
  // How often the outbox of domain events is delivered to its consumers (notifications, real-time…); 0: never.
  OUTBOX_INTERVAL_MS: z.coerce.number().int().min(0).max(3_600_000).default(500),
  // How often the money moves' worker retries and completes refunds, transfers, reversals and payouts; 0: never.
  // Unset means 1000, except under NODE_ENV=test where tests drive it.
  MONEY_MOVES_INTERVAL_MS: z.coerce.number().int().min(0).max(3_600_000).optional(),
  // How often the ledger is reconciled with the payment processor, in minutes; 0: only when an administrator asks.
  RECONCILIATION_INTERVAL_MINUTES: z.coerce.number().int().min(0).max(10_080).optional(),
  // How long the answer to a write sent with an Idempotency-Key is replayed (DESIGN.md §10); at most 30 days.
  IDEMPOTENCY_KEY_TTL_HOURS: z.coerce.number().int().min(1).max(720).default(24),
  // Real-time over the Pusher channels protocol (DESIGN.md §8): the app's credentials, as a Pusher
  // client and the auth endpoint know them. Without a secret, one is derived from the JWT secret
  // (each instance derives the same), so no well-known value ever signs subscriptions.
  PUSHER_APP_ID: z.string().trim().min(1).default('marketplace'),
  PUSHER_APP_KEY: z.string().trim().regex(/^[A-Za-z0-9_-]{1,64}$/, 'letters, digits, - and _ only').default('marketplace-key'),
  PUSHER_APP_SECRET: z.string().min(16, 'must be at least 16 characters').optional(),
  // Seconds of silence after which a client pings (sent to it on connection); a silent client is dropped later.
  PUSHER_ACTIVITY_TIMEOUT: z.coerce.number().int().min(1).max(600).default(120),
  // How often the lifecycle timers (request and offer expiry, auto-completion) run; 0: never (a cron
  // runs `node dist/cli/timers.js` instead). Unset means 60, except under NODE_ENV=test where tests run them.
  LIFECYCLE_TIMERS_INTERVAL_SECONDS: z.coerce.number().int().min(0).max(86_400).optional(),
  // Payments: Stripe when STRIPE_SECRET_KEY is set (STRIPE_WEBHOOK_SECRET then required), the
  // built-in processor otherwise. The API host/port/protocol point the SDK elsewhere (tests).
  STRIPE_SECRET_KEY: z.string().min(1).optional(),
  STRIPE_WEBHOOK_SECRET: z.string().min(1).optional(),
  STRIPE_API_HOST: z.string().min(1).optional(),
  STRIPE_API_PORT: env.port(443),
  STRIPE_API_PROTOCOL: z.enum(['http', 'https']).default('https'),
  // Where the processor's onboarding form sends the prestataire back (default: the front end's pages).
  PSP_RETURN_URL: httpUrl.optional(),
  PSP_REFRESH_URL: httpUrl.optional(),
  // The VAT rate included in the prices, in percent, printed on invoices.
  INVOICE_VAT_PERCENT: z.coerce.number().min(0).max(100).default(20),
  // Web push with VAPID (RFC 8292): all three or none; push is off without them.
  VAPID_PUBLIC_KEY: z.string().trim().regex(/^[A-Za-z0-9_-]{86,88}={0,2}$/, 'must be a base64url P-256 public key (web-push generate-vapid-keys)').optional(),
  VAPID_PRIVATE_KEY: z.string().trim().regex(/^[A-Za-z0-9_-]{42,44}={0,2}$/, 'must be a base64url P-256 private key (web-push generate-vapid-keys)').optional(),
  VAPID_SUBJECT: z.string().trim().regex(/^(mailto:|https:\/\/)\S+$/, 'must be a mailto: or https:// URL').optional(),
  // Broadcasts: how often the job looks for one to send (0: never, tests drive it) and how many users a batch reaches.
  BROADCAST_INTERVAL_MS: z.coerce.number().int().min(0).max(3_600_000).optional(),
  BROADCAST_BATCH_SIZE: z.coerce.number().int().min(1).max(5000).default(200),
  PLATFORM_TIME_ZONE: z.string().trim().refine(isTimeZone, 'must be an IANA time zone such as Europe/Paris').default('Europe/Paris'),
});

export interface Config extends CommonConfig {
  /** Run the migrations when the database opens (off where a Job migrates before a rollout). */
  migrateOnStart: boolean;
  appUrl: string;
  /** SMTP when `smtpUrl` is set (required in production); otherwise messages stay in the outbox table only. */
  mail: { smtpUrl?: string; from: string };
  /** Social sign-in: accepted audiences (client ids) and where the provider's signing keys are. */
  social: {
    google: { clientIds: string[]; jwksUrl: string };
    apple: { clientIds: string[]; jwksUrl: string };
  };
  bootstrapAdmin?: { email: string; password: string };
  /** Uploaded files (photos, documents) on local disk. */
  storage: { dir: string; maxUploadBytes: number };
  /** Insert the catalogue and the cities at start-up (idempotent). */
  seedReferenceData: boolean;
  /**
   * The repair-data vendor (bundled dataset when `url` is unset): per-attempt timeout, attempts per
   * call with exponential backoff from `retryBaseMs`, cache lifetime, and the circuit breaker that
   * opens after `circuitFailures` consecutive failed attempts for `circuitOpenSeconds`.
   */
  repairData: {
    url?: string;
    apiKey?: string;
    timeoutMs: number;
    maxAttempts: number;
    retryBaseMs: number;
    cacheTtlHours: number;
    circuitFailures: number;
    circuitOpenSeconds: number;
  };
  /** The AI layer's model (none when `url` is unset) and how long its answers are reused. */
  ai: { url?: string; apiKey?: string; model: string; timeoutMs: number; cacheTtlHours: number };
  /** The IANA zone of the platform's calendar: "today" for expiry dates and ages. */
  platformTimeZone: string;
  /** Delivery period of the outbox to its consumers, in ms (0: off). */
  outboxIntervalMs: number;
  /** Period of the money moves' worker, in ms (0: off; tests drive it). */
  moneyMovesIntervalMs: number;
  /** Period of the reconciliation with the processor, in minutes (0: on demand only; unset: 60, 0 under NODE_ENV=test). */
  reconciliationIntervalMinutes: number;
  /** How long the answer to a write sent with an `Idempotency-Key` is replayed, in hours. */
  idempotencyKeyTtlHours: number;
  /** The Pusher-protocol endpoint `/app/{key}` and `POST /broadcasting/auth` (DESIGN.md §8). */
  pusher: { appId: string; key: string; secret: string; activityTimeoutSeconds: number };
  /** Seconds between two passes of the lifecycle timers; 0: they do not run in the app. */
  lifecycleTimersIntervalSeconds: number;
  /** The payment processor: Stripe's API when `stripe` is set, the built-in processor otherwise. */
  payments: {
    stripe?: { secretKey: string; host?: string; port?: number; protocol?: 'http' | 'https' };
    webhookSecret?: string;
    returnUrl: string;
    refreshUrl: string;
    vatPercent: number;
  };
  /** Web push: notifications go to browsers' subscriptions when the VAPID keys are set. */
  push: { vapid?: { publicKey: string; privateKey: string; subject: string } };
  /** The broadcasts job: its period in ms (0: off) and the users per batch. */
  broadcasts: { intervalMs: number; batchSize: number };
}

/** Reads the environment once; nothing else in the app reads process.env. */
export function loadConfig(source: Record<string, string | undefined> = process.env): Readonly<Config> {
  const parsed = parseEnv(schema, source);
  const common = buildCommonConfig(parsed, { appName: 'marketplace-api', port: parsed.PORT });
  checkCombinations(parsed);
  const appUrl = parsed.APP_URL.replace(/\/+$/, '');
  // With an in-memory database there is no data directory; files then go to a per-process
  // directory under the system's temporary folder unless STORAGE_DIR says otherwise.
  const dataDir = common.database.dataDir;
  const storageDir = parsed.STORAGE_DIR ?? (dataDir.startsWith('memory://') ? '' : join(dataDir, 'uploads'));
  return Object.freeze({
    ...common,
    migrateOnStart: parsed.MIGRATE_ON_START,
    appUrl,
    mail: { smtpUrl: parsed.SMTP_URL, from: parsed.MAIL_FROM },
    social: {
      google: { clientIds: parsed.GOOGLE_CLIENT_IDS, jwksUrl: parsed.GOOGLE_JWKS_URL },
      apple: { clientIds: parsed.APPLE_CLIENT_IDS, jwksUrl: parsed.APPLE_JWKS_URL },
    },
    bootstrapAdmin:
      parsed.BOOTSTRAP_ADMIN_EMAIL && parsed.BOOTSTRAP_ADMIN_PASSWORD
        ? { email: parsed.BOOTSTRAP_ADMIN_EMAIL, password: parsed.BOOTSTRAP_ADMIN_PASSWORD }
        : undefined,
    storage: { dir: storageDir, maxUploadBytes: parsed.UPLOAD_MAX_BYTES },
    seedReferenceData: parsed.SEED_REFERENCE_DATA ?? parsed.NODE_ENV !== 'test',
    ...integrations(parsed),
    platformTimeZone: parsed.PLATFORM_TIME_ZONE,
    outboxIntervalMs: parsed.OUTBOX_INTERVAL_MS,
    moneyMovesIntervalMs: parsed.MONEY_MOVES_INTERVAL_MS ?? (parsed.NODE_ENV === 'test' ? 0 : 1000),
    reconciliationIntervalMinutes: parsed.RECONCILIATION_INTERVAL_MINUTES ?? (parsed.NODE_ENV === 'test' ? 0 : 60),
    idempotencyKeyTtlHours: parsed.IDEMPOTENCY_KEY_TTL_HOURS,
    pusher: {
      appId: parsed.PUSHER_APP_ID,
      key: parsed.PUSHER_APP_KEY,
      secret: parsed.PUSHER_APP_SECRET ?? createHmac('sha256', common.auth.jwtSecret).update('pusher-app-secret').digest('hex'),
      activityTimeoutSeconds: parsed.PUSHER_ACTIVITY_TIMEOUT,
    },
    lifecycleTimersIntervalSeconds: parsed.LIFECYCLE_TIMERS_INTERVAL_SECONDS ?? (parsed.NODE_ENV === 'test' ? 0 : 60),
    ...paymentsAndPush(parsed, appUrl),
    broadcasts: {
      intervalMs: parsed.BROADCAST_INTERVAL_MS ?? (parsed.NODE_ENV === 'test' ? 0 : 2000),
      batchSize: parsed.BROADCAST_BATCH_SIZE,
    },
  });
}

type Parsed = ReturnType<typeof parseEnv<typeof schema>>;

/** The settings that only make sense together (or not at all). */
function checkCombinations(parsed: Parsed) {
  if (parsed.NODE_ENV === 'production' && !parsed.SMTP_URL) {
    // The built-in mailer only keeps messages in the outbox table: in production reset links and
    // codes would reach nobody (and must never be read from a log instead).
    throw new ConfigError('Invalid configuration:\n  SMTP_URL: required in production (NODE_ENV=production): e-mails carry sign-in links and codes');
  }
  if (Boolean(parsed.BOOTSTRAP_ADMIN_EMAIL) !== Boolean(parsed.BOOTSTRAP_ADMIN_PASSWORD)) {
    throw new ConfigError('Invalid configuration:\n  BOOTSTRAP_ADMIN_EMAIL and BOOTSTRAP_ADMIN_PASSWORD: set both or neither');
  }
  if (parsed.STRIPE_SECRET_KEY && !parsed.STRIPE_WEBHOOK_SECRET) {
    // Without it no webhook could be verified, and the webhook is the source of truth of payments.
    throw new ConfigError('Invalid configuration:\n  STRIPE_WEBHOOK_SECRET: required with STRIPE_SECRET_KEY');
  }
  const vapid = [parsed.VAPID_PUBLIC_KEY, parsed.VAPID_PRIVATE_KEY, parsed.VAPID_SUBJECT];
  if (vapid.some(Boolean) && !vapid.every(Boolean)) {
    throw new ConfigError('Invalid configuration:\n  VAPID_PUBLIC_KEY, VAPID_PRIVATE_KEY and VAPID_SUBJECT: set all three or none');
  }
}

/** The repair-data vendor and the AI model. */
function integrations(parsed: Parsed): Pick<Config, 'repairData' | 'ai'> {
  return {
    repairData: {
      url: parsed.REPAIRDATA_URL?.replace(/\/+$/, ''),
      apiKey: parsed.REPAIRDATA_API_KEY,
      timeoutMs: parsed.REPAIRDATA_TIMEOUT_MS,
      maxAttempts: parsed.REPAIRDATA_MAX_ATTEMPTS,
      retryBaseMs: parsed.REPAIRDATA_RETRY_BASE_MS,
      cacheTtlHours: parsed.REPAIRDATA_CACHE_TTL_HOURS,
      circuitFailures: parsed.REPAIRDATA_CIRCUIT_FAILURES,
      circuitOpenSeconds: parsed.REPAIRDATA_CIRCUIT_OPEN_SECONDS,
    },
    ai: {
      url: parsed.AI_API_URL,
      apiKey: parsed.AI_API_KEY,
      model: parsed.AI_MODEL,
      timeoutMs: parsed.AI_TIMEOUT_MS,
      cacheTtlHours: parsed.AI_CACHE_TTL_HOURS,
    },
  };
}

/** The payment processor, invoices, and web push. */
function paymentsAndPush(parsed: Parsed, appUrl: string): Pick<Config, 'payments' | 'push'> {
  return {
    payments: {
      stripe: parsed.STRIPE_SECRET_KEY
        ? {
            secretKey: parsed.STRIPE_SECRET_KEY,
            ...(parsed.STRIPE_API_HOST ? { host: parsed.STRIPE_API_HOST, port: parsed.STRIPE_API_PORT, protocol: parsed.STRIPE_API_PROTOCOL } : {}),
          }
        : undefined,
      webhookSecret: parsed.STRIPE_WEBHOOK_SECRET,
      returnUrl: parsed.PSP_RETURN_URL ?? `${appUrl}/prestataire/payments/return`,
      refreshUrl: parsed.PSP_REFRESH_URL ?? `${appUrl}/prestataire/payments/refresh`,
      vatPercent: parsed.INVOICE_VAT_PERCENT,
    },
    push: {
      vapid:
        parsed.VAPID_PUBLIC_KEY && parsed.VAPID_PRIVATE_KEY && parsed.VAPID_SUBJECT
          ? { publicKey: parsed.VAPID_PUBLIC_KEY, privateKey: parsed.VAPID_PRIVATE_KEY, subject: parsed.VAPID_SUBJECT }
          : undefined,
    },
  };
}
