import { createHmac, randomInt, timingSafeEqual } from 'node:crypto';

/**
 * The Pusher channels protocol, version 7 (https://pusher.com/docs/channels/library_auth_reference/pusher-websockets-protocol/):
 * what the server sends and how a subscription's signature is made and checked.
 */
export const PROTOCOL_VERSION = 7;

/** Pusher's error codes: 4000–4099 the client must not reconnect, 4200–4299 it may at once, 4300+ others. */
export const PUSHER_ERROR = {
  appNotFound: 4001,
  invalidVersion: 4006,
  unsupportedProtocol: 4007,
  noProtocol: 4008,
  unauthorized: 4009,
  pongNotReceived: 4201,
  clientEventRateLimited: 4301,
} as const;

/** Pusher's rule: letters, digits and `_-=@,.;`, at most 164 characters. */
const CHANNEL_NAME = /^[A-Za-z0-9_\-=@,.;]{1,164}$/;
const SOCKET_ID = /^\d{1,12}\.\d{1,12}$/;

export const isChannelName = (name: unknown): name is string => typeof name === 'string' && CHANNEL_NAME.test(name);
export const isSocketId = (id: unknown): id is string => typeof id === 'string' && SOCKET_ID.test(id);
export const isPrivateChannel = (name: string) => name.startsWith('private-') || name.startsWith('presence-');
export const isPresenceChannel = (name: string) => name.startsWith('presence-');

/** A fresh socket id in Pusher's `<digits>.<digits>` form. */
export function newSocketId(): string {
  return `${randomInt(1, 2 ** 31)}.${randomInt(1, 2 ** 31)}`;
}

/** The hex HMAC-SHA256 of `socket_id:channel_name[:channel_data]` with the app secret. */
export function sign(secret: string, socketId: string, channel: string, channelData?: string): string {
  const text = channelData === undefined ? `${socketId}:${channel}` : `${socketId}:${channel}:${channelData}`;
  return createHmac('sha256', secret).update(text).digest('hex');
}

/** The `auth` of a subscription: `<key>:<signature>`. */
export function authFor(key: string, secret: string, socketId: string, channel: string, channelData?: string): string {
  return `${key}:${sign(secret, socketId, channel, channelData)}`;
}

/** Whether `auth` is this app's signature of the subscription (constant-time comparison). */
export function verifyAuth(key: string, secret: string, auth: unknown, socketId: string, channel: string, channelData?: string): boolean {
  if (typeof auth !== 'string') return false;
  const separator = auth.indexOf(':');
  if (separator < 0 || auth.slice(0, separator) !== key) return false;
  const given = Buffer.from(auth.slice(separator + 1), 'utf8');
  const expected = Buffer.from(sign(secret, socketId, channel, channelData), 'utf8');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** A frame as the server sends it: `data` is always a JSON string. */
export function frame(event: string, data: unknown, channel?: string): string {
  return JSON.stringify({ event, ...(channel === undefined ? {} : { channel }), data: typeof data === 'string' ? data : JSON.stringify(data) });
}

/** `pusher:error`: its `data` is an object, as Pusher sends it. */
export function errorFrame(code: number | null, message: string): string {
  return JSON.stringify({ event: 'pusher:error', data: { code, message } });
}
