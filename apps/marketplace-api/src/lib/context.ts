import type { Actor } from '@repo/auth';
import type { FastifyRequest } from 'fastify';

/** Who acts and from where: passed to services, recorded in the activity log. */
export interface RequestContext {
  actor: Actor | null;
  ip: string;
  requestId: string;
}

export function contextOf(request: FastifyRequest): RequestContext {
  return { actor: request.actor, ip: request.ip, requestId: request.id };
}

/** The context of work the platform does on its own (jobs, start-up). */
export const systemContext: RequestContext = { actor: null, ip: '', requestId: 'system' };
