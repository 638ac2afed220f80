import type { FastifyPluginAsyncZod } from '@repo/http';
import { requireActor } from '@repo/auth';
import { errorResponses } from '@repo/schemas';
import { ProjectScopedParams } from '../projects/index.js';
import type { ProjectConfigService } from './project-config.service.js';
import { ConfigEnvelope, presentConfig, UpdateConfigBody, WebhookSecretEnvelope } from './project-config.schemas.js';

const security = [{ bearerAuth: [] }];

export function projectConfigRoutes(deps: { config: ProjectConfigService }): FastifyPluginAsyncZod {
  return async (app) => {
    app.addHook('onRequest', app.auth.authenticate);

    app.get(
      '/projects/:project_id/config',
      {
        schema: {
          operationId: 'getProjectConfig',
          tags: ['config'],
          summary: 'Retention, alert levels and notification settings',
          security,
          params: ProjectScopedParams,
          response: { 200: ConfigEnvelope, ...errorResponses(401, 404, 422, 429) },
        },
      },
      async (request) => ({ data: presentConfig(await deps.config.get(requireActor(request), request.params.project_id)) }),
    );

    app.put(
      '/projects/:project_id/config',
      {
        schema: {
          operationId: 'updateProjectConfig',
          tags: ['config'],
          summary: 'Update the configuration (owners only); notification settings merge over the current ones',
          security,
          params: ProjectScopedParams,
          body: UpdateConfigBody,
          response: { 200: ConfigEnvelope, ...errorResponses(400, 401, 403, 404, 422, 429) },
        },
      },
      async (request) => {
        const project = await deps.config.update(requireActor(request), request.params.project_id, request.body);
        return { data: presentConfig(project), message: 'Configuration updated' };
      },
    );

    // A route of its own rather than a field of the configuration: the secret is shown when an
    // owner asks for it, not in every configuration read that members and UIs make.
    app.get(
      '/projects/:project_id/config/webhook-secret',
      {
        schema: {
          operationId: 'getWebhookSecret',
          tags: ['config'],
          summary: "The secret that signs this project's webhook requests (owners only)",
          security,
          params: ProjectScopedParams,
          response: { 200: WebhookSecretEnvelope, ...errorResponses(401, 403, 404, 422, 429) },
        },
      },
      async (request) => {
        const secret = await deps.config.webhookSecret(requireActor(request), request.params.project_id);
        return { data: { project_id: secret.projectId, webhook_secret: secret.webhookSecret } };
      },
    );
  };
}
