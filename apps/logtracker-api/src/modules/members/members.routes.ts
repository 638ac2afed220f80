import { requireActor } from '@repo/auth';
import type { FastifyPluginAsyncZod } from '@repo/http';
import { errorResponses } from '@repo/schemas';
import { ProjectScopedParams } from '../projects/index.js';
import type { MembersService } from './members.service.js';
import {
  AddMemberBody,
  MemberEnvelope,
  MemberListEnvelope,
  MemberParams,
  messageEnvelope,
  presentMember,
  UpdateMemberBody,
} from './members.schemas.js';

const security = [{ bearerAuth: [] }];

export function membersRoutes(deps: { members: MembersService }): FastifyPluginAsyncZod {
  return async (app) => {
    app.addHook('onRequest', app.auth.authenticate);

    app.get(
      '/projects/:project_id/members',
      {
        schema: {
          operationId: 'listMembers',
          tags: ['projects'],
          summary: "The project's members and their roles",
          security,
          params: ProjectScopedParams,
          response: { 200: MemberListEnvelope, ...errorResponses(401, 404, 422, 429) },
        },
      },
      async (request) => ({
        data: (await deps.members.list(requireActor(request), request.params.project_id)).map(presentMember),
      }),
    );

    app.post(
      '/projects/:project_id/members',
      {
        schema: {
          operationId: 'addMember',
          tags: ['projects'],
          summary: 'Add an existing user by e-mail (owners only)',
          security,
          params: ProjectScopedParams,
          body: AddMemberBody,
          response: { 201: MemberEnvelope, ...errorResponses(400, 401, 403, 404, 409, 422, 429) },
        },
      },
      async (request, reply) => {
        const member = await deps.members.add(
          requireActor(request),
          request.params.project_id,
          request.body.email,
          request.body.role,
        );
        return reply.status(201).send({ data: presentMember(member), message: 'Member added' });
      },
    );

    app.put(
      '/projects/:project_id/members/:user_id',
      {
        schema: {
          operationId: 'updateMember',
          tags: ['projects'],
          summary: "Change a member's role (owners only; the last owner stays owner)",
          security,
          params: MemberParams,
          body: UpdateMemberBody,
          response: { 200: MemberEnvelope, ...errorResponses(400, 401, 403, 404, 409, 422, 429) },
        },
      },
      async (request) => {
        const member = await deps.members.changeRole(
          requireActor(request),
          request.params.project_id,
          request.params.user_id,
          request.body.role,
        );
        return { data: presentMember(member), message: 'Role updated' };
      },
    );

    app.delete(
      '/projects/:project_id/members/:user_id',
      {
        schema: {
          operationId: 'removeMember',
          tags: ['projects'],
          summary: 'Remove a member (owners), or leave a project (yourself); the last owner cannot leave',
          security,
          params: MemberParams,
          response: { 200: messageEnvelope, ...errorResponses(401, 403, 404, 409, 422, 429) },
        },
      },
      async (request) => {
        await deps.members.remove(requireActor(request), request.params.project_id, request.params.user_id);
        return { message: 'Member removed' };
      },
    );
  };
}
