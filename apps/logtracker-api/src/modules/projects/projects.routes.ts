import type { FastifyPluginAsyncZod } from '@repo/http';
import { requireActor } from '@repo/auth';
import { errorResponses, messageEnvelope } from '@repo/schemas';
import type { ProjectsService } from './projects.service.js';
import {
  CreateProjectBody,
  ListProjectsQuery,
  presentProject,
  ProjectEnvelope,
  ProjectListEnvelope,
  ProjectParams,
  UpdateProjectBody,
} from './projects.schemas.js';

const security = [{ bearerAuth: [] }];

export function projectsRoutes(deps: { projects: ProjectsService }): FastifyPluginAsyncZod {
  return async (app) => {
    app.addHook('onRequest', app.auth.authenticate);

    app.get(
      '/projects',
      {
        schema: {
          operationId: 'listProjects',
          tags: ['projects'],
          summary: "The caller's projects, newest first",
          security,
          querystring: ListProjectsQuery,
          response: { 200: ProjectListEnvelope, ...errorResponses(401, 422, 429) },
        },
      },
      async (request) => {
        const { page, per_page } = request.query;
        const { rows, meta } = await deps.projects.list(requireActor(request), page, per_page);
        return { data: rows.map((r) => presentProject(r.project, r.role, r.logCount)), meta };
      },
    );

    app.post(
      '/projects',
      {
        schema: {
          operationId: 'createProject',
          tags: ['projects'],
          summary: 'Create a project; the caller becomes its owner',
          security,
          body: CreateProjectBody,
          response: { 201: ProjectEnvelope, ...errorResponses(400, 401, 422, 429) },
        },
      },
      async (request, reply) => {
        const { project, role, logCount } = await deps.projects.create(requireActor(request), request.body);
        return reply.status(201).send({ data: presentProject(project, role, logCount), message: 'Project created' });
      },
    );

    app.get(
      '/projects/:id',
      {
        schema: {
          operationId: 'getProject',
          tags: ['projects'],
          summary: 'A project the caller is a member of, with its role',
          security,
          params: ProjectParams,
          response: { 200: ProjectEnvelope, ...errorResponses(401, 404, 422, 429) },
        },
      },
      async (request) => {
        const { project, role, logCount } = await deps.projects.get(requireActor(request), request.params.id);
        return { data: presentProject(project, role, logCount) };
      },
    );

    app.put(
      '/projects/:id',
      {
        schema: {
          operationId: 'updateProject',
          tags: ['projects'],
          summary: 'Update name, description or repository URL (owners only)',
          security,
          params: ProjectParams,
          body: UpdateProjectBody,
          response: { 200: ProjectEnvelope, ...errorResponses(400, 401, 403, 404, 422, 429) },
        },
      },
      async (request) => {
        const { project, role, logCount } = await deps.projects.update(requireActor(request), request.params.id, request.body);
        return { data: presentProject(project, role, logCount), message: 'Project updated' };
      },
    );

    app.delete(
      '/projects/:id',
      {
        schema: {
          operationId: 'deleteProject',
          tags: ['projects'],
          summary: 'Delete a project and all its logs (owners only)',
          security,
          params: ProjectParams,
          response: { 200: messageEnvelope, ...errorResponses(401, 403, 404, 422, 429) },
        },
      },
      async (request) => {
        await deps.projects.remove(requireActor(request), request.params.id);
        return { message: 'Project deleted' };
      },
    );
  };
}
