import { buildCommonConfig, commonEnvShape, ConfigError, env, parseEnv, type CommonConfig } from '@repo/config';
import { z } from 'zod';

const schema = z.object({
  ...commonEnvShape,
  PORT: env.port(8001),
  // false: the app starts on the schema as it is; a migration Job (`node dist/cli/migrate.js`) runs first.
  MIGRATE_ON_START: env.bool.default(true),
  LOGS_BATCH_MAX_ENTRIES: env.positiveInt(10_000),
  LOGS_BATCH_MAX_BYTES: env.positiveInt(5 * 1024 * 1024),
  RATE_LIMIT_INGEST: env.positiveInt(1200),
  // Inserts of logs under way at once per instance; the others wait their turn (docs/operations.md).
  INGEST_WRITERS: z.coerce.number().int().min(1).max(64).default(2),
  // How long the answer to a write sent with an Idempotency-Key is replayed (DESIGN.md §10); at most 30 days.
  IDEMPOTENCY_KEY_TTL_HOURS: z.coerce.number().int().min(1).max(720).default(24),
  MAINTENANCE_INTERVAL_SECONDS: z.coerce.number().int().min(0).max(86_400).optional(),
  SMTP_URL: z.string().regex(/^smtps?:\/\//, 'must be an smtp:// or smtps:// URL').optional(),
  MAIL_FROM: z.string().min(1).default('Log Tracker <alerts@logtracker.local>'),
  ALERT_WORKER_ENABLED: env.bool.optional(),
  ALERT_WORKER_INTERVAL_MS: env.positiveInt(5000),
  ALERT_MAX_ATTEMPTS: env.positiveInt(6),
  WEBHOOK_TIMEOUT_MS: env.positiveInt(5000),
  // Unset: allowed outside production only (local receivers in development), refused in production.
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: env.bool.optional(),
  AI_API_URL: z.url({ protocol: /^https?$/ }).optional(),
  AI_API_KEY: z.string().min(1).optional(),
  AI_MODEL: z.string().min(1).default('gpt-4o-mini'),
  AI_TIMEOUT_MS: env.positiveInt(15_000),
  // 0 turns the in-app schedule off (a CronJob runs `node dist/cli/retention.js` instead); at most a week.
  RETENTION_INTERVAL_MINUTES: z.coerce.number().int().min(0).max(7 * 24 * 60).optional(),
  RETENTION_BATCH_SIZE: env.positiveInt(5000),
  RETENTION_PAUSE_MS: z.coerce.number().int().min(0).max(60_000).default(50),
  TAIL_HEARTBEAT_MS: env.positiveInt(30_000),
  TAIL_SESSION_CHECK_MS: env.positiveInt(60_000),
  TAIL_MAX_BUFFERED_BYTES: env.positiveInt(4 * 1024 * 1024),
});

export interface Config extends CommonConfig {
  /** Run the migrations when the database opens (off where a Job migrates before a rollout). */
  migrateOnStart: boolean;
  /**
   * Batch limits, and `writers`: how many inserts of logs run at once per instance. More writers
   * contend on the same index pages (the trigram index's pending list, the newest page of the time
   * index) and the database does more per log, not more logs. Requests that wait for a writer are
   * stored together, one statement per project (createLogWrites).
   */
  logs: { batchMaxEntries: number; batchMaxBytes: number; writers: number };
  /** Requests per minute per ingest key: pipelines ship in bursts, beyond a person's budget. */
  ingestRateLimit: number;
  /** How long the answer to a write sent with an `Idempotency-Key` is replayed, in hours. */
  idempotencyKeyTtlHours: number;
  /** Partition upkeep and rollup compaction, in seconds between runs; 0 turns it off. */
  maintenanceIntervalSeconds: number;
  /** SMTP when `smtpUrl` is set (required in production); otherwise e-mails are kept in memory for development. */
  mail: { smtpUrl?: string; from: string };
  /**
   * The alert delivery worker. It starts with the app unless disabled (by default in tests, which
   * drive it themselves); `maxAttempts` tries per delivery before it is marked failed.
   */
  alerts: {
    workerEnabled: boolean;
    workerIntervalMs: number;
    maxAttempts: number;
    webhookTimeoutMs: number;
    /** Whether webhooks may target private, loopback and link-local addresses. */
    allowPrivateNetworks: boolean;
  };
  /** An OpenAI-compatible chat API for the optional analysis narrative; none when `url` is unset. */
  ai: { url?: string; apiKey?: string; model: string; timeoutMs: number };
  /**
   * Deleting expired logs: every `intervalMinutes` in the app (0: never, and by default in tests,
   * whose fixed-date logs it would delete), `batchSize` rows per statement, `pauseMs` between them.
   */
  retention: { intervalMinutes: number; batchSize: number; pauseMs: number };
  /** The live tail: ping interval, session re-check interval, and the send buffer a client may fall behind by. */
  tail: { heartbeatMs: number; sessionCheckMs: number; maxBufferedBytes: number };
}

/** Reads the environment once; nothing else in the app reads process.env. */
export function loadConfig(source: Record<string, string | undefined> = process.env): Readonly<Config> {
  const parsed = parseEnv(schema, source);
  if (parsed.NODE_ENV === 'production' && !parsed.SMTP_URL) {
    // The built-in mailer keeps alerts in memory only: in production they would reach nobody.
    throw new ConfigError('Invalid configuration:\n  SMTP_URL: required in production (NODE_ENV=production): alert e-mails need a mail server');
  }
  return Object.freeze({
    ...buildCommonConfig(parsed, { appName: 'logtracker-api', port: parsed.PORT }),
    migrateOnStart: parsed.MIGRATE_ON_START,
    logs: { batchMaxEntries: parsed.LOGS_BATCH_MAX_ENTRIES, batchMaxBytes: parsed.LOGS_BATCH_MAX_BYTES, writers: parsed.INGEST_WRITERS },
    ingestRateLimit: parsed.RATE_LIMIT_INGEST,
    idempotencyKeyTtlHours: parsed.IDEMPOTENCY_KEY_TTL_HOURS,
    // Off by default under test, where suites drive the job themselves.
    maintenanceIntervalSeconds: parsed.MAINTENANCE_INTERVAL_SECONDS ?? (parsed.NODE_ENV === 'test' ? 0 : 60),
    mail: { smtpUrl: parsed.SMTP_URL, from: parsed.MAIL_FROM },
    alerts: {
      workerEnabled: parsed.ALERT_WORKER_ENABLED ?? parsed.NODE_ENV !== 'test',
      workerIntervalMs: parsed.ALERT_WORKER_INTERVAL_MS,
      maxAttempts: parsed.ALERT_MAX_ATTEMPTS,
      webhookTimeoutMs: parsed.WEBHOOK_TIMEOUT_MS,
      allowPrivateNetworks: parsed.WEBHOOK_ALLOW_PRIVATE_NETWORKS ?? parsed.NODE_ENV !== 'production',
    },
    ai: { url: parsed.AI_API_URL, apiKey: parsed.AI_API_KEY, model: parsed.AI_MODEL, timeoutMs: parsed.AI_TIMEOUT_MS },
    retention: {
      intervalMinutes: parsed.RETENTION_INTERVAL_MINUTES ?? (parsed.NODE_ENV === 'test' ? 0 : 60),
      batchSize: parsed.RETENTION_BATCH_SIZE,
      pauseMs: parsed.RETENTION_PAUSE_MS,
    },
    tail: {
      heartbeatMs: parsed.TAIL_HEARTBEAT_MS,
      sessionCheckMs: parsed.TAIL_SESSION_CHECK_MS,
      maxBufferedBytes: parsed.TAIL_MAX_BUFFERED_BYTES,
    },
  });
}
