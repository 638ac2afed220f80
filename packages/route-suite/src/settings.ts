import { z } from 'zod';

/** The suite's knobs, read from the environment once, when a suite is defined. */
export interface SuiteSettings {
  /** Base seed; each operation's fast-check seed is derived from it and the operationId. */
  seed: number;
  /** fast-check runs per operation in the hostile-input property. */
  runs: number;
  /** Replays one generated request: the run number a failure names, with ROUTE_SUITE_SEED and `-t <operationId>`. */
  path?: string;
}

export const DEFAULT_SEED = 20_261_125;
export const DEFAULT_RUNS = 20;

const schema = z.object({
  ROUTE_SUITE_SEED: z.coerce.number().int().min(-(2 ** 31)).max(2 ** 31 - 1).default(DEFAULT_SEED),
  ROUTE_SUITE_RUNS: z.coerce.number().int().min(1).max(100_000).default(DEFAULT_RUNS),
  ROUTE_SUITE_PATH: z.string().regex(/^\d+$/, 'must be the run number a failure names, such as 7').optional(),
});

/** Parses the ROUTE_SUITE_* variables; a bad value fails with the variable named. */
export function readSettings(env: Record<string, string | undefined>): SuiteSettings {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `  ${issue.path.join('.')}: ${issue.message}`);
    throw new Error(`Invalid route-suite settings:\n${lines.join('\n')}`);
  }
  return {
    seed: parsed.data.ROUTE_SUITE_SEED,
    runs: parsed.data.ROUTE_SUITE_RUNS,
    path: parsed.data.ROUTE_SUITE_PATH,
  };
}
