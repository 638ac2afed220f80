import { requireActor } from '@repo/auth';
import type { FastifyRequest } from 'fastify';
import type { Role } from '../db/schema/index.js';

/**
 * A signed-in user acting through an authenticated route: the first argument of every service call
 * such a route makes. Services scope their queries by `userId` and check `role`; the activity log
 * records all of it.
 */
export interface Actor {
  kind: 'user';
  userId: number;
  role: Role;
  sessionId: string;
  requestId: string;
  ip: string;
}

/** Someone not signed in, on a public route (registration, sign-in, e-mailed links): known by address only. */
export interface Anonymous {
  kind: 'anonymous';
  requestId: string;
  ip: string;
}

/** The platform acting on its own: jobs, start-up (the bootstrap administrator), maintenance commands. */
export interface SystemActor {
  kind: 'system';
  requestId: string;
}

/** Whoever causes a change; what the activity log records as its actor. */
export type Caller = Actor | Anonymous | SystemActor;

/** The one system actor: recorded with no user and the role `system`. */
export const systemActor: SystemActor = Object.freeze({ kind: 'system', requestId: 'system' });

/** The signed-in actor of a request; 401 where a route forgot its authentication hook. */
export function actorOf(request: FastifyRequest): Actor {
  const { userId, role, sessionId, requestId } = requireActor(request);
  // The session store answers the users.role column, so the string is one of the app's roles.
  return { kind: 'user', userId, role: role as Role, sessionId, requestId, ip: request.ip };
}

/** The caller of a public route, whether or not a token came with it. */
export function anonymousOf(request: FastifyRequest): Anonymous {
  return { kind: 'anonymous', requestId: request.id, ip: request.ip };
}

/** A route open to all whose answer depends on who asks: the actor when signed in, anonymous otherwise. */
export function callerOf(request: FastifyRequest): Actor | Anonymous {
  return request.actor ? actorOf(request) : anonymousOf(request);
}

/**
 * The `X-Socket-ID` of a request: the real-time connection of the client that sent it, which must
 * not hear the events its own request causes (Laravel's `toOthers`). A service that publishes such
 * an event puts it as `socket_id` in the event's payload (or in a move's `details`); the real-time
 * consumer leaves that connection out. Absent or malformed: everyone hears the event.
 */
export function socketIdOf(request: FastifyRequest): string | undefined {
  const value = request.headers['x-socket-id'];
  return typeof value === 'string' && /^\d{1,12}\.\d{1,12}$/.test(value) ? value : undefined;
}
