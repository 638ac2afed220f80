import { z } from 'zod';
import { SETTING_DEFINITIONS, type PlatformSettings, type SettingKey } from './settings.service.js';

const KEYS = Object.keys(SETTING_DEFINITIONS) as SettingKey[];

function settingValue(key: SettingKey) {
  const { min, max, default: fallback } = SETTING_DEFINITIONS[key];
  const message = `Must be a whole number between ${min} and ${max}`;
  return z.number({ error: message }).int(message).min(min, message).max(max, message).describe(`Default ${fallback}`);
}

/** Every setting with its current value. */
export const SettingsResponse = z.object(
  Object.fromEntries(KEYS.map((k) => [k, z.number().int()])) as Record<SettingKey, z.ZodNumber>,
);

/** Any key the settings do not have: refused under its own name. */
const unknownSetting = z.unknown().refine(() => false, { message: 'Unknown setting' });

/**
 * Some settings to change. Every key is checked in one pass, so an unknown key and a value out of
 * range are each named under their own key (a strict object would name unknown keys only as a
 * whole, under no field).
 */
export const SettingsPatch = z
  .object(Object.fromEntries(KEYS.map((k) => [k, settingValue(k).optional()])) as Record<SettingKey, z.ZodOptional<z.ZodNumber>>)
  .catchall(unknownSetting)
  .describe('Unknown keys answer 422 (`Unknown setting`)');

export function presentSettings(s: PlatformSettings): z.infer<typeof SettingsResponse> {
  return Object.fromEntries(KEYS.map((k) => [k, s[k]])) as z.infer<typeof SettingsResponse>;
}
