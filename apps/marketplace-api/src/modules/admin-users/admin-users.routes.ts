import type { FastifyPluginAsyncZod } from '@repo/http';
import { errorResponses, messageEnvelope } from '@repo/schemas';
import { actorOf } from '../../lib/context.js';
import { presentActivity } from '../activity-log/index.js';
import {
  AdminUserDetailEnvelope,
  AdminUserEnvelope,
  AdminUserListEnvelope,
  CreateUserBody,
  ListUsersQuery,
  presentAdminUser,
  SendWarningBody,
  UpdateStatusBody,
  UpdateUserBody,
  UserParams,
} from './admin-users.schemas.js';
import type { AdminUsersService } from './admin-users.service.js';

const security = [{ bearerAuth: [] }];
const tags = ['admin'];

export function adminUsersRoutes(deps: { adminUsers: AdminUsersService }): FastifyPluginAsyncZod {
  return async (app) => {
    app.addHook('onRequest', app.auth.requireRole('admin'));

    app.get(
      '/admin/users',
      {
        schema: {
          operationId: 'adminListUsers',
          tags,
          summary: 'Accounts, filtered by role, status, name or e-mail, verification and creation date',
          security,
          querystring: ListUsersQuery,
          response: { 200: AdminUserListEnvelope, ...errorResponses(401, 403, 422, 429) },
        },
      },
      async (request) => {
        const { rows, meta } = await deps.adminUsers.list(request.query);
        return { data: rows.map((r) => presentAdminUser(r.user, r.profile)), meta };
      },
    );

    app.post(
      '/admin/users',
      {
        schema: {
          operationId: 'adminCreateUser',
          tags,
          summary: 'Create a client or prestataire account; without a password its owner is e-mailed a link to choose one',
          security,
          body: CreateUserBody,
          response: { 201: AdminUserEnvelope, ...errorResponses(400, 401, 403, 409, 422, 429) },
        },
      },
      async (request, reply) => {
        const { user, profile } = await deps.adminUsers.create(actorOf(request), request.body);
        return reply.status(201).send({ data: presentAdminUser(user, profile), message: 'Account created' });
      },
    );

    app.get(
      '/admin/users/:user',
      {
        schema: {
          operationId: 'adminShowUser',
          tags,
          summary: 'An account with its profile, session and device counts and its latest activity',
          security,
          params: UserParams,
          response: { 200: AdminUserDetailEnvelope, ...errorResponses(401, 403, 404, 422, 429) },
        },
      },
      async (request) => {
        const { user, profile, counts, activity } = await deps.adminUsers.get(request.params.user);
        return {
          data: {
            ...presentAdminUser(user, profile),
            counts: { active_sessions: counts.activeSessions, devices: counts.devices },
            recent_activity: activity.map(presentActivity),
          },
        };
      },
    );

    app.put(
      '/admin/users/:user',
      {
        schema: {
          operationId: 'adminUpdateUser',
          tags,
          summary: "Change an account's name, phone, e-mail, language or e-mail verification",
          security,
          params: UserParams,
          body: UpdateUserBody,
          response: { 200: AdminUserEnvelope, ...errorResponses(400, 401, 403, 404, 409, 422, 429) },
        },
      },
      async (request) => {
        const { user, profile } = await deps.adminUsers.update(actorOf(request), request.params.user, request.body);
        return { data: presentAdminUser(user, profile), message: 'Account updated' };
      },
    );

    app.put(
      '/admin/users/:user/status',
      {
        schema: {
          operationId: 'adminUpdateUserStatus',
          tags,
          summary: 'Activate, suspend or ban an account; suspension and banning end its sessions at once',
          security,
          params: UserParams,
          body: UpdateStatusBody,
          response: { 200: AdminUserEnvelope, ...errorResponses(400, 401, 403, 404, 409, 422, 429) },
        },
      },
      async (request) => {
        const { status, reason } = request.body;
        const { user, profile } = await deps.adminUsers.setStatus(actorOf(request), request.params.user, status, reason || null);
        return { data: presentAdminUser(user, profile), message: 'Status updated' };
      },
    );

    app.delete(
      '/admin/users/:user',
      {
        schema: {
          operationId: 'adminDeleteUser',
          tags,
          summary: 'Delete an account: personal data is erased, its history kept anonymised',
          security,
          params: UserParams,
          response: { 200: messageEnvelope, ...errorResponses(401, 403, 404, 409, 422, 429) },
        },
      },
      async (request) => {
        await deps.adminUsers.remove(actorOf(request), request.params.user);
        return { message: 'Account deleted' };
      },
    );

    app.post(
      '/admin/users/:user/send-warning',
      {
        schema: {
          operationId: 'adminSendUserWarning',
          tags,
          summary: 'E-mail a warning to the user and add it to their notifications',
          security,
          params: UserParams,
          body: SendWarningBody,
          response: { 200: messageEnvelope, ...errorResponses(400, 401, 403, 404, 422, 429) },
        },
      },
      async (request) => {
        await deps.adminUsers.warn(actorOf(request), request.params.user, request.body);
        return { message: 'Warning sent' };
      },
    );
  };
}
