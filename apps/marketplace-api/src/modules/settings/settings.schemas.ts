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

/**
 * Some settings to change. Every key is checked in one pass: an unknown one (`catchall` of never)
 * and a value out of range are each named under their own key.
 */
export const SettingsPatch = z
  .object(Object.fromEntries(KEYS.map((k) => [k, settingValue(k).optional()])) as Record<SettingKey, z.ZodOptional<z.ZodNumber>>)
  .catchall(z.never({ error: 'Unknown setting' }));

export function presentSettings(s: PlatformSettings): z.infer<typeof SettingsResponse> {
  return Object.fromEntries(KEYS.map((k) => [k, s[k]])) as z.infer<typeof SettingsResponse>;
}
