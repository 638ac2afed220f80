import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** Parses an environment with a zod schema; a failure lists every bad variable in one readable message. */
export function parseEnv<S extends z.ZodType>(schema: S, env: Record<string, string | undefined>): z.output<S> {
  const result = schema.safeParse(env);
  if (!result.success) {
    const lines = result.error.issues.map((issue) => `  ${issue.path.join('.') || '(environment)'}: ${issue.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  return result.data;
}

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

const csv = z.string().transform((v) =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean),
);

/** Zod pieces for the variables every service reads. */
export const env = {
  bool,
  csv,
  port: (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback),
  positiveInt: (fallback: number) => z.coerce.number().int().positive().default(fallback),
  nodeEnv: z.enum(['development', 'production', 'test']).default('development'),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  postgresUrl: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
    .optional(),
};

/** The variables both services share; each app extends this object with its own. */
export const commonEnvShape = {
  NODE_ENV: env.nodeEnv,
  HOST: z.string().min(1).optional(),
  LOG_LEVEL: env.logLevel,
  DATABASE_URL: env.postgresUrl,
  DATABASE_POOL_SIZE: env.positiveInt(10),
  // While no server of DATABASE_URL takes writes (a failover): how long a request waits for a
  // connection before 503, and how long start-up waits for a writable primary before exiting.
  DATABASE_ACQUIRE_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(2000),
  DATABASE_STARTUP_TIMEOUT_SECONDS: z.coerce.number().int().min(0).max(3600).default(60),
  DATA_DIR: z.string().min(1).optional(),
  CORS_ORIGINS: csv.default(['http://localhost:3000', 'http://localhost:5173', 'http://localhost:5174']),
  RATE_LIMIT_AUTHENTICATED: env.positiveInt(60),
  RATE_LIMIT_PUBLIC: env.positiveInt(30),
  // Where request counts and login/e-mail throttles live; default: redis with REDIS_URL, else postgres with DATABASE_URL, else memory.
  RATE_LIMIT_STORE: z.enum(['memory', 'postgres', 'redis']).optional(),
  REDIS_URL: z.string().regex(/^rediss?:\/\//, 'must be a redis:// URL').optional(),
  JWT_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
  TOKEN_TTL_DAYS: env.positiveInt(30),
  // The cost of new password hashes: `low` only where nothing real is protected (the test suite); refused in production.
  PASSWORD_HASH_COST: z.enum(['standard', 'low']).default('standard'),
  TRUST_PROXY: bool.default(false),
  /** The browsable documentation and the OpenAPI document at /docs; on unless switched off. */
  DOCS_ENABLED: bool.default(true),
  // Metrics (Prometheus): see metricsEnvShape below.
  ...metricsEnvShape(),
};

export interface CommonConfig {
  env: 'development' | 'production' | 'test';
  host: string;
  port: number;
  logLevel: string;
  database: { url?: string; dataDir: string; poolSize: number; acquireTimeoutMs: number; startupTimeoutMs: number };
  cors: { origins: string[] };
  rateLimit: { authenticated: number; public: number; store: 'memory' | 'postgres' | 'redis'; redisUrl?: string };
  auth: { jwtSecret: string; tokenTtlDays: number; passwordHashCost: 'standard' | 'low' };
  trustProxy: boolean;
  docsEnabled: boolean;
  metrics: MetricsConfig;
}

type CommonEnv = z.output<z.ZodObject<typeof commonEnvShape>>;

/**
 * Turns the parsed common variables into the typed config shared by both apps.
 * Secrets production must set are generated and kept in the data directory elsewhere,
 * so a fresh checkout runs with no configuration and tokens survive restarts.
 */
export function buildCommonConfig(parsed: CommonEnv, opts: { appName: string; port: number }): CommonConfig {
  const production = parsed.NODE_ENV === 'production';
  const dataDir = parsed.DATA_DIR ?? join(process.cwd(), '.data', opts.appName);
  // Shared counters (several instances): Redis when configured, else the PostgreSQL database.
  const rateLimitStore = parsed.RATE_LIMIT_STORE ?? (parsed.REDIS_URL ? 'redis' : parsed.DATABASE_URL ? 'postgres' : 'memory');
  if (rateLimitStore === 'redis' && !parsed.REDIS_URL) {
    throw new ConfigError('Invalid configuration:\n  REDIS_URL: required when RATE_LIMIT_STORE=redis');
  }
  if (production && parsed.PASSWORD_HASH_COST !== 'standard') {
    throw new ConfigError('Invalid configuration:\n  PASSWORD_HASH_COST: must be standard in production');
  }
  if (rateLimitStore === 'postgres' && !parsed.DATABASE_URL) {
    throw new ConfigError('Invalid configuration:\n  DATABASE_URL: required when RATE_LIMIT_STORE=postgres');
  }
  return {
    env: parsed.NODE_ENV,
    host: parsed.HOST ?? (production ? '0.0.0.0' : '127.0.0.1'),
    port: opts.port,
    logLevel: parsed.LOG_LEVEL,
    database: {
      url: parsed.DATABASE_URL,
      dataDir,
      poolSize: parsed.DATABASE_POOL_SIZE,
      acquireTimeoutMs: parsed.DATABASE_ACQUIRE_TIMEOUT_MS,
      startupTimeoutMs: parsed.DATABASE_STARTUP_TIMEOUT_SECONDS * 1000,
    },
    cors: { origins: parsed.CORS_ORIGINS },
    rateLimit: {
      authenticated: parsed.RATE_LIMIT_AUTHENTICATED,
      public: parsed.RATE_LIMIT_PUBLIC,
      store: rateLimitStore,
      redisUrl: parsed.REDIS_URL,
    },
    auth: {
      jwtSecret: resolveSecret({ name: 'JWT_SECRET', value: parsed.JWT_SECRET, dataDir, production }),
      tokenTtlDays: parsed.TOKEN_TTL_DAYS,
      passwordHashCost: parsed.PASSWORD_HASH_COST,
    },
    trustProxy: parsed.TRUST_PROXY,
    docsEnabled: parsed.DOCS_ENABLED,
    metrics: buildMetricsConfig(parsed, production, opts.port),
  };
}

/**
 * A secret production must set. Outside production a missing one is generated once and kept in
 * `<dataDir>/secrets.json`; with an in-memory database it lives as long as the process.
 */
export function resolveSecret(opts: { name: string; value?: string; dataDir: string; production: boolean }): string {
  if (opts.value) return opts.value;
  if (opts.production) {
    throw new ConfigError(`Invalid configuration:\n  ${opts.name}: required in production (NODE_ENV=production)`);
  }
  if (opts.dataDir.startsWith('memory://')) return randomBytes(32).toString('base64url');
  const file = join(opts.dataDir, 'secrets.json');
  let secrets: Record<string, string>;
  try {
    secrets = JSON.parse(readFileSync(file, 'utf8')) as Record<string, string>;
  } catch {
    // No file yet (first start) or an unreadable one: start a new set.
    secrets = {};
  }
  const existing = secrets[opts.name];
  if (existing) return existing;
  const generated = randomBytes(32).toString('base64url');
  mkdirSync(opts.dataDir, { recursive: true });
  writeFileSync(file, JSON.stringify({ ...secrets, [opts.name]: generated }, null, 2), { mode: 0o600 });
  return generated;
}

/**
 * Whether the module at `moduleUrl` (its `import.meta.url`) is the script node was started with,
 * so that a CLI runs when executed (`node dist/cli/migrate.js`) and not when a test imports it.
 * Links are followed: pnpm's bin shims and a deployed symlink name the same file.
 */
export function isEntryPoint(moduleUrl: string, argv: readonly string[] = process.argv): boolean {
  const entry = argv[1];
  if (!entry) return false;
  try {
    return realpathSync(entry) === fileURLToPath(moduleUrl);
  } catch {
    return false;
  }
}

// --- Metrics (Prometheus /metrics) ---------------------------------------------------------------
/**
 * METRICS_TOKEN: a bearer token every scrape must carry (at least 16 characters).
 * METRICS_PORT: serve /metrics on a listener of its own (on HOST) instead of the app's port.
 * In production the app's public port answers /metrics only with a token; with neither set the
 * metrics are not served at all (a warning at start-up says so).
 */
function metricsEnvShape() {
  return {
    METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
    METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  };
}

export interface MetricsConfig {
  token?: string;
  port?: number;
  /** Whether the app's own port serves /metrics (not when METRICS_PORT moves it, nor in production without a token). */
  onAppPort: boolean;
}

function buildMetricsConfig(parsed: { METRICS_TOKEN?: string; METRICS_PORT?: number }, production: boolean, appPort: number): MetricsConfig {
  if (parsed.METRICS_PORT !== undefined && parsed.METRICS_PORT !== 0 && parsed.METRICS_PORT === appPort) {
    throw new ConfigError('Invalid configuration:\n  METRICS_PORT: must differ from PORT');
  }
  return {
    token: parsed.METRICS_TOKEN,
    port: parsed.METRICS_PORT,
    onAppPort: parsed.METRICS_PORT === undefined && (!production || parsed.METRICS_TOKEN !== undefined),
  };
}
