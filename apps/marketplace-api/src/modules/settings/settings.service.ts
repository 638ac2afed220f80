import { withTransaction } from '@repo/db';
import { AppError, type FieldErrors } from '@repo/http';
import type { DbTx } from '../../db/index.js';
import type { Actor } from '../../lib/context.js';
import type { ActivityRecorder } from '../activity-log/index.js';
import { readSettings, writeSettings } from './settings.repository.js';

/** Each setting: its default and the whole numbers it may take (DESIGN.md §6). */
export const SETTING_DEFINITIONS = {
  /** How long a request stays open to offers. */
  request_lifetime_days: { default: 14, min: 1, max: 90 },
  /** How long an offer stands when its prestataire gives no `valid_until`. */
  offer_lifetime_days: { default: 7, min: 1, max: 60 },
  /** A cancellation closer than this to the start is late. */
  cancellation_window_hours: { default: 24, min: 0, max: 168 },
  /** What a late cancellation by the client costs, as a percentage of the price (0: nothing). */
  late_cancellation_fee_percent: { default: 0, min: 0, max: 100 },
  /** An ended, paid appointment completes on its own this many days after payment. */
  auto_complete_days: { default: 3, min: 1, max: 60 },
} as const;

export type SettingKey = keyof typeof SETTING_DEFINITIONS;
export type PlatformSettings = Record<SettingKey, number>;

const KEYS = Object.keys(SETTING_DEFINITIONS) as SettingKey[];

function isKey(key: string): key is SettingKey {
  return Object.hasOwn(SETTING_DEFINITIONS, key);
}

/** The defaults, overridden by what is stored (a stored value no longer valid falls back to its default). */
function resolve(stored: { key: string; value: unknown }[]): PlatformSettings {
  const settings = Object.fromEntries(KEYS.map((k) => [k, SETTING_DEFINITIONS[k].default])) as PlatformSettings;
  for (const { key, value } of stored) {
    if (isKey(key) && validValue(key, value)) settings[key] = value;
  }
  return settings;
}

function validValue(key: SettingKey, value: unknown): value is number {
  const { min, max } = SETTING_DEFINITIONS[key];
  return typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max;
}

/**
 * The platform's settings: lifetimes of requests and offers, the cancellation window and fee, the
 * auto-completion delay. Read by the code that depends on them at the moment it acts.
 */
export function createSettingsService(deps: { db: DbTx; recorder: ActivityRecorder }) {
  async function get(tx?: DbTx): Promise<PlatformSettings> {
    return resolve(await readSettings(tx ?? deps.db));
  }

  return {
    get,

    /** Changes some settings; an unknown key or a value out of range answers 422 naming it, and nothing is written. */
    async update(actor: Actor, patch: Record<string, unknown>): Promise<PlatformSettings> {
      const errors: FieldErrors = {};
      for (const [key, value] of Object.entries(patch)) {
        if (!isKey(key)) errors[key] = ['Unknown setting'];
        else if (!validValue(key, value)) {
          const { min, max } = SETTING_DEFINITIONS[key];
          errors[key] = [`Must be a whole number between ${min} and ${max}`];
        }
      }
      if (Object.keys(errors).length > 0) throw AppError.validation(errors);
      return withTransaction(deps.db, async (tx) => {
        const before = await get(tx);
        await writeSettings(tx, patch, actor.userId);
        const after = await get(tx);
        const changed = KEYS.filter((k) => before[k] !== after[k]);
        if (changed.length > 0) {
          await deps.recorder.record(
            actor,
            'settings.updated',
            { type: 'settings', id: null },
            { before: Object.fromEntries(changed.map((k) => [k, before[k]])), after: Object.fromEntries(changed.map((k) => [k, after[k]])) },
            tx,
          );
        }
        return after;
      });
    },
  };
}

export type SettingsService = ReturnType<typeof createSettingsService>;
