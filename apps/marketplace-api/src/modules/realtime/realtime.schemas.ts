import { z } from 'zod';

/** `POST /broadcasting/auth`, as pusher-js and Laravel Echo send it (form-encoded or JSON). */
export const BroadcastingAuthBody = z.object({
  socket_id: z.string().regex(/^\d{1,12}\.\d{1,12}$/, 'Must be a socket id such as 1234.5678'),
  channel_name: z.string().regex(/^[A-Za-z0-9_\-=@,.;]{1,164}$/, 'Must be a channel name such as private-user.1'),
});

/** Pusher's shape, not the envelope: the client library reads `auth` at the top. */
export const BroadcastingAuthResponse = z.object({ auth: z.string() });

export const PusherSocketParams = z.object({ key: z.string().max(64) });
export const PusherSocketQuery = z.object({
  protocol: z.string().max(8).optional(),
  client: z.string().max(64).optional(),
  version: z.string().max(32).optional(),
  flash: z.string().max(8).optional(),
});
