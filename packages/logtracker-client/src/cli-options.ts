import { parseArgs, type ParseArgsConfig } from 'node:util';
import { DEFAULT_BACKOFF, type Backoff } from './retry.js';
import type { Level } from './entry.js';
import { levelOf } from './levels.js';

export class UsageError extends Error {}

/** The flags `ship` and `run` share. */
export const COMMON_OPTIONS = {
  project: { type: 'string', short: 'p' },
  url: { type: 'string' },
  key: { type: 'string' },
  source: { type: 'string', short: 's' },
  level: { type: 'string', short: 'l' },
  'flush-ms': { type: 'string' },
  'flush-timeout': { type: 'string' },
  'max-backoff': { type: 'string' },
  'best-effort': { type: 'boolean' },
  'no-gzip': { type: 'boolean' },
  quiet: { type: 'boolean', short: 'q' },
  help: { type: 'boolean', short: 'h' },
} satisfies ParseArgsConfig['options'];

export interface ShipSettings {
  url: string;
  key: string;
  projectId: number;
  source: string | undefined;
  level: Level | undefined;
  flushMs: number;
  flushTimeoutMs: number;
  backoff: Backoff;
  bestEffort: boolean;
  gzip: boolean;
  quiet: boolean;
}

type Values = { [K in keyof typeof COMMON_OPTIONS]?: (typeof COMMON_OPTIONS)[K]['type'] extends 'boolean' ? boolean : string };

export const DEFAULT_URL = 'http://127.0.0.1:8001';

/** The settings from the flags, then the environment (LOGTRACKER_URL, LOGTRACKER_KEY, LOGTRACKER_PROJECT). */
export function settingsOf(values: Values, env: Record<string, string | undefined>): ShipSettings {
  const key = values.key ?? env.LOGTRACKER_KEY;
  if (!key) throw new UsageError('no ingest key: set LOGTRACKER_KEY or pass --key');
  const project = values.project ?? env.LOGTRACKER_PROJECT;
  if (!project) throw new UsageError('no project: pass --project <id> or set LOGTRACKER_PROJECT');
  const projectId = Number(project);
  if (!Number.isSafeInteger(projectId) || projectId < 1) throw new UsageError(`--project must be a project id (a positive integer), not "${project}"`);
  const url = values.url ?? env.LOGTRACKER_URL ?? DEFAULT_URL;
  if (!/^https?:\/\//.test(url)) throw new UsageError(`--url must be an http:// or https:// address, not "${url}"`);
  return {
    url,
    key,
    projectId,
    source: values.source,
    level: values.level === undefined ? undefined : levelFlag(values.level),
    flushMs: values['flush-ms'] === undefined ? 1000 : positiveNumber('--flush-ms', values['flush-ms']),
    flushTimeoutMs: values['flush-timeout'] === undefined ? 10_000 : duration('--flush-timeout', values['flush-timeout']),
    backoff: values['max-backoff'] === undefined ? DEFAULT_BACKOFF : { ...DEFAULT_BACKOFF, maxMs: duration('--max-backoff', values['max-backoff']) },
    bestEffort: values['best-effort'] ?? false,
    gzip: !(values['no-gzip'] ?? false),
    quiet: values.quiet ?? false,
  };
}

/** Parses `args` with the common flags; unknown flags are a usage error. */
export function parseCommon(args: string[]) {
  try {
    return parseArgs({ args, options: COMMON_OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

function positiveNumber(flag: string, text: string): number {
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0) throw new UsageError(`${flag} must be a positive number, not "${text}"`);
  return value;
}

/** `10s`, `500ms`, `2m`, or a number of seconds, in milliseconds. */
export function duration(flag: string, text: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(text.trim());
  if (!match) throw new UsageError(`${flag} must be a duration such as 10s, 500ms or 2m, not "${text}"`);
  const unit = match[2] ?? 's';
  return Number(match[1]) * (unit === 'ms' ? 1 : unit === 's' ? 1000 : 60_000);
}

/** `--level`: one of the log tracker's four levels, or a name they map from (warn, fatal, trace…). */
function levelFlag(value: string): Level {
  const level = levelOf(value);
  if (!level) throw new UsageError(`--level must be error, warning, info or debug, not "${value}"`);
  return level;
}
