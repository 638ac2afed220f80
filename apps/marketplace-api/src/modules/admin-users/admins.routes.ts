import type { FastifyPluginAsyncZod } from '@repo/http';
import { errorResponses, messageEnvelope } from '@repo/schemas';
import { actorOf } from '../../lib/context.js';
import { AdminUserEnvelope, AdminUserListEnvelope, presentAdminUser, UserParams } from './admin-users.schemas.js';
import { CreateAdminBody, ListAdminsQuery } from './admins.schemas.js';
import type { AdminsService } from './admins.service.js';

const security = [{ bearerAuth: [] }];
const tags = ['admin'];

export function adminsRoutes(deps: { admins: AdminsService }): FastifyPluginAsyncZod {
  return async (app) => {
    app.addHook('onRequest', app.auth.requireRole('admin'));

    app.get(
      '/admin/admins',
      {
        schema: {
          operationId: 'adminListAdmins',
          tags,
          summary: 'Administrator accounts, newest first',
          security,
          querystring: ListAdminsQuery,
          response: { 200: AdminUserListEnvelope, ...errorResponses(401, 403, 422, 429) },
        },
      },
      async (request) => {
        const { rows, meta } = await deps.admins.list(request.query.page, request.query.per_page);
        return { data: rows.map((user) => presentAdminUser(user)), meta };
      },
    );

    app.post(
      '/admin/admins',
      {
        schema: {
          operationId: 'adminCreateAdmin',
          tags,
          summary: 'Create an administrator account',
          security,
          body: CreateAdminBody,
          response: { 201: AdminUserEnvelope, ...errorResponses(400, 401, 403, 409, 422, 429) },
        },
      },
      async (request, reply) => {
        const user = await deps.admins.create(actorOf(request), request.body);
        return reply.status(201).send({ data: presentAdminUser(user), message: 'Administrator created' });
      },
    );

    app.delete(
      '/admin/admins/:user',
      {
        schema: {
          operationId: 'adminDeleteAdmin',
          tags,
          summary: 'Delete an administrator account; never one\'s own, never the last active administrator',
          security,
          params: UserParams,
          response: { 200: messageEnvelope, ...errorResponses(401, 403, 404, 409, 422, 429) },
        },
      },
      async (request) => {
        await deps.admins.remove(actorOf(request), request.params.user);
        return { message: 'Administrator deleted' };
      },
    );
  };
}
