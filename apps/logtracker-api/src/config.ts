import { buildCommonConfig, commonEnvShape, env, parseEnv, type CommonConfig } from '@repo/config';
import { z } from 'zod';

const schema = z.object({
  ...commonEnvShape,
  PORT: env.port(8001),
  LOGS_BATCH_MAX_ENTRIES: env.positiveInt(10_000),
  LOGS_BATCH_MAX_BYTES: env.positiveInt(5 * 1024 * 1024),
  RATE_LIMIT_INGEST: env.positiveInt(1200),
});

export interface Config extends CommonConfig {
  logs: { batchMaxEntries: number; batchMaxBytes: number };
  /** Requests per minute per ingest key: pipelines ship in bursts, beyond a person's budget. */
  ingestRateLimit: number;
}

/** Reads the environment once; nothing else in the app reads process.env. */
export function loadConfig(source: Record<string, string | undefined> = process.env): Readonly<Config> {
  const parsed = parseEnv(schema, source);
  return Object.freeze({
    ...buildCommonConfig(parsed, { appName: 'logtracker-api', port: parsed.PORT }),
    logs: { batchMaxEntries: parsed.LOGS_BATCH_MAX_ENTRIES, batchMaxBytes: parsed.LOGS_BATCH_MAX_BYTES },
    ingestRateLimit: parsed.RATE_LIMIT_INGEST,
  });
}
