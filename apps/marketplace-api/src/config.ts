import { join } from 'node:path';
import { buildCommonConfig, commonEnvShape, ConfigError, env, parseEnv, type CommonConfig } from '@repo/config';
import { z } from 'zod';

const httpUrl = z.url({ protocol: /^https?$/ });

const schema = z.object({
  ...commonEnvShape,
  PORT: env.port(8000),
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
});

export interface Config extends CommonConfig {
  appUrl: string;
  /** SMTP when `smtpUrl` is set; otherwise messages go to the log and the outbox table only. */
  mail: { smtpUrl?: string; from: string };
  /** Social sign-in: accepted audiences (client ids) and where the provider's signing keys are. */
  social: {
    google: { clientIds: string[]; jwksUrl: string };
    apple: { clientIds: string[]; jwksUrl: string };
  };
  bootstrapAdmin?: { email: string; password: string };
  /** Uploaded files (photos, documents) on local disk. */
  storage: { dir: string; maxUploadBytes: number };
}

/** Reads the environment once; nothing else in the app reads process.env. */
export function loadConfig(source: Record<string, string | undefined> = process.env): Readonly<Config> {
  const parsed = parseEnv(schema, source);
  const common = buildCommonConfig(parsed, { appName: 'marketplace-api', port: parsed.PORT });
  if (Boolean(parsed.BOOTSTRAP_ADMIN_EMAIL) !== Boolean(parsed.BOOTSTRAP_ADMIN_PASSWORD)) {
    throw new ConfigError('Invalid configuration:\n  BOOTSTRAP_ADMIN_EMAIL and BOOTSTRAP_ADMIN_PASSWORD: set both or neither');
  }
  // With an in-memory database there is no data directory; files then go to a per-process
  // directory under the system's temporary folder unless STORAGE_DIR says otherwise.
  const dataDir = common.database.dataDir;
  const storageDir = parsed.STORAGE_DIR ?? (dataDir.startsWith('memory://') ? '' : join(dataDir, 'uploads'));
  return Object.freeze({
    ...common,
    appUrl: parsed.APP_URL.replace(/\/+$/, ''),
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
  });
}
