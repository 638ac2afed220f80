import { buildCommonConfig, commonEnvShape, env, parseEnv, type CommonConfig } from '@repo/config';
import { z } from 'zod';

const schema = z.object({
  ...commonEnvShape,
  PORT: env.port(8000),
});

export type Config = CommonConfig;

/** Reads the environment once; nothing else in the app reads process.env. */
export function loadConfig(source: Record<string, string | undefined> = process.env): Readonly<Config> {
  const parsed = parseEnv(schema, source);
  return Object.freeze(buildCommonConfig(parsed, { appName: 'marketplace-api', port: parsed.PORT }));
}
