import { email, envelope, iso, storableText, UNSTORABLE_TEXT_MESSAGE, timestamp } from '@repo/schemas';
import { z } from 'zod';
import { DEVICE_KINDS, LANGS } from '../../db/schema/index.js';
import { nameField, optionalPhoneField } from '../auth/index.js';

/** A partial update of the account: fields left out stay as they are; `phone: null` clears it. */
export const UpdateMeBody = z.object({
  first_name: nameField.optional(),
  last_name: nameField.optional(),
  phone: optionalPhoneField,
  email: email.optional(),
  // Asked only with a new `email`; an account without a password relies on a recent sign-in.
  current_password: z.string().max(256).optional(),
});
export type UpdateMeBody = z.infer<typeof UpdateMeBody>;

export const LangBody = z.object({ lang: z.enum(LANGS) });

/** Key material of a push subscription: unpadded base64url that decodes to an exact number of bytes. */
function base64urlKey(bytes: number, check?: (decoded: Buffer) => boolean) {
  return z
    .string()
    .max(200)
    .transform((value, ctx) => {
      const unpadded = value.replace(/=+$/, '');
      const decoded = /^[A-Za-z0-9_-]+$/.test(unpadded) ? Buffer.from(unpadded, 'base64url') : undefined;
      if (!decoded || decoded.length !== bytes || (check && !check(decoded))) {
        ctx.addIssue({ code: 'custom', message: `Must be the base64url encoding of ${bytes} bytes` });
        return z.NEVER;
      }
      return unpadded;
    });
}

const platformField = z.string().trim().min(1).max(40).refine(storableText, UNSTORABLE_TEXT_MESSAGE).optional();

const WebPushDevice = z.object({
  kind: z.literal('webpush'),
  subscription: z.object({
    endpoint: z.url({ protocol: /^https$/, message: 'Must be an https URL' }).max(2048),
    keys: z.object({
      // An uncompressed P-256 public key starts with 0x04.
      p256dh: base64urlKey(65, (key) => key[0] === 0x04),
      auth: base64urlKey(16),
    }),
  }),
  platform: platformField,
});

const FcmDevice = z.object({
  kind: z.literal('fcm'),
  token: z
    .string()
    .trim()
    .min(32)
    .max(4096)
    .regex(/^[A-Za-z0-9_:.-]+$/, 'Must be a Firebase registration token'),
  platform: platformField,
});

const ApnsDevice = z.object({
  kind: z.literal('apns'),
  token: z
    .string()
    .trim()
    .regex(/^[0-9a-fA-F]{64,200}$/, 'Must be an APNs device token (hexadecimal)')
    .transform((token) => token.toLowerCase()),
  platform: platformField,
});

export const DeviceTokenBody = z.discriminatedUnion('kind', [WebPushDevice, FcmDevice, ApnsDevice]);
export type DeviceTokenBody = z.infer<typeof DeviceTokenBody>;

export const DeviceResponse = z.object({
  id: z.number().int(),
  kind: z.enum(DEVICE_KINDS),
  /** The push service URL of a web-push subscription. */
  endpoint: z.string().nullable(),
  /** The FCM or APNs token of a mobile device. */
  token: z.string().nullable(),
  platform: z.string().nullable(),
  created_at: timestamp,
  last_seen_at: timestamp,
});
export const DeviceEnvelope = envelope(DeviceResponse);

export function presentDevice(device: {
  id: number;
  kind: (typeof DEVICE_KINDS)[number];
  token: string;
  platform: string | null;
  createdAt: Date;
  lastSeenAt: Date;
}): z.infer<typeof DeviceResponse> {
  return {
    id: device.id,
    kind: device.kind,
    endpoint: device.kind === 'webpush' ? device.token : null,
    token: device.kind === 'webpush' ? null : device.token,
    platform: device.platform,
    created_at: iso(device.createdAt),
    last_seen_at: iso(device.lastSeenAt),
  };
}

/** The password confirms a deletion; an account without one relies on a recent sign-in instead. */
export const DeleteAccountBody = z.object({ password: z.string().max(256).optional() }).nullish();
export type DeleteAccountBody = z.infer<typeof DeleteAccountBody>;
