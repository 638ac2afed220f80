import { AppError } from '@repo/http';
import type { Actor } from '../../lib/context.js';
import { authFor } from './pusher.protocol.js';

/** Who may join a conversation's channel: its two parties. */
export type IsParty = (userId: number, conversationId: number) => Promise<boolean>;

const USER_CHANNEL = /^private-user\.(\d{1,10})$/;
const CONVERSATION_CHANNEL = /^private-conversation\.(\d{1,10})$/;

/**
 * Signs subscriptions to the private channels a user may join (DESIGN.md §8): their own
 * `private-user.{id}`, and `private-conversation.{id}` of the conversations they take part in.
 */
export function createRealtimeService(deps: { key: string; secret: string; isParty: IsParty }) {
  return {
    async authorize(actor: Actor, input: { socket_id: string; channel_name: string }): Promise<{ auth: string }> {
      const { socket_id: socketId, channel_name: channel } = input;
      const user = USER_CHANNEL.exec(channel);
      const conversation = CONVERSATION_CHANNEL.exec(channel);
      const allowed = user
        ? Number(user[1]) === actor.userId
        : conversation
          ? await deps.isParty(actor.userId, Number(conversation[1]))
          : false;
      if (!allowed) throw new AppError('forbidden', 'You may not subscribe to this channel');
      return { auth: authFor(deps.key, deps.secret, socketId, channel) };
    },
  };
}

export type RealtimeService = ReturnType<typeof createRealtimeService>;
