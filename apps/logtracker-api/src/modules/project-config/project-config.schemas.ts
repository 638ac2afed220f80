import { email, envelope } from '@repo/schemas';
import { z } from 'zod';
import { LOG_LEVELS, type NotificationSettings, type Project } from '../../db/schema/index.js';

const notificationSettingsShape = {
  enabled: z.boolean(),
  webhook_url: z.url({ protocol: /^https?$/, message: 'Must be an http(s) URL' }).max(2048).nullable(),
  email_recipients: z
    .array(email)
    .max(20, 'At most 20 recipients')
    .refine((list) => new Set(list).size === list.length, 'Recipients must be unique'),
  threshold: z
    .object({
      count: z.number().int().min(1).max(1_000_000),
      window_minutes: z.number().int().min(1).max(1440),
    })
    .strict(),
  quiet_period_minutes: z.number().int().min(0).max(10_080),
};

// Strict: an unknown or misspelt setting is an error, not silently dropped, so that no one
// believes an alert is configured when it is not. Partial down to the threshold, which the
// service merges field by field like the rest.
export const NotificationSettingsInput = z
  .object({ ...notificationSettingsShape, threshold: notificationSettingsShape.threshold.partial().strict() })
  .partial()
  .strict();

export const UpdateConfigBody = z
  .object({
    retention_days: z.number().int().min(1).max(3650).optional(),
    alert_levels: z
      .array(z.enum(LOG_LEVELS, { message: `Must be one of: ${LOG_LEVELS.join(', ')}` }))
      .max(LOG_LEVELS.length)
      .refine((list) => new Set(list).size === list.length, 'Levels must be unique')
      .optional(),
    notification_settings: NotificationSettingsInput.optional(),
  })
  .refine((b) => b.retention_days !== undefined || b.alert_levels !== undefined || b.notification_settings !== undefined, {
    message: 'Send at least one of retention_days, alert_levels, notification_settings',
  });
export type UpdateConfigBody = z.infer<typeof UpdateConfigBody>;

export const ConfigResponse = z.object({
  project_id: z.number().int(),
  retention_days: z.number().int(),
  alert_levels: z.array(z.enum(LOG_LEVELS)),
  notification_settings: z.object(notificationSettingsShape),
});

export const ConfigEnvelope = envelope(ConfigResponse);

export const WebhookSecretEnvelope = envelope(
  z.object({
    project_id: z.number().int(),
    webhook_secret: z
      .string()
      .describe('Signs webhook bodies: x-logtracker-signature = sha256=<hex HMAC-SHA256(secret, "<x-logtracker-timestamp>.<body>")>'),
  }),
);

export function presentConfig(project: Project) {
  return {
    project_id: project.id,
    retention_days: project.retentionDays,
    alert_levels: project.alertLevels,
    notification_settings: project.notificationSettings satisfies NotificationSettings,
  };
}
