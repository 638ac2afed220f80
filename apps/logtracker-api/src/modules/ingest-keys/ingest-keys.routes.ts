import { requireActor } from '@repo/auth';
import type { FastifyPluginAsyncZod } from '@repo/http';
import { errorResponses } from '@repo/schemas';
import { ProjectScopedParams } from '../projects/index.js';
import type { IngestKeysService } from './ingest-keys.service.js';
import {
  CreatedIngestKeyEnvelope,
  CreateIngestKeyBody,
  IngestKeyEnvelope,
  IngestKeyListEnvelope,
  IngestKeyParams,
  presentIngestKey,
} from './ingest-keys.schemas.js';

const security = [{ bearerAuth: [] }];

export function ingestKeysRoutes(deps: { ingestKeys: IngestKeysService }): FastifyPluginAsyncZod {
  return async (app) => {
    app.addHook('onRequest', app.auth.authenticate);

    app.post(
      '/projects/:project_id/ingest-keys',
      {
        schema: {
          operationId: 'createIngestKey',
          tags: ['ingest keys'],
          summary: 'Create an ingest-only key for a CI pipeline (owners only); the key is shown once',
          security,
          params: ProjectScopedParams,
          body: CreateIngestKeyBody,
          response: { 201: CreatedIngestKeyEnvelope, ...errorResponses(400, 401, 403, 404, 422, 429) },
        },
      },
      async (request, reply) => {
        const { row, key } = await deps.ingestKeys.create(requireActor(request), request.params.project_id, request.body.name);
        return reply.status(201).send({ data: { ...presentIngestKey(row), key }, message: 'Store this key now: it is not shown again' });
      },
    );

    app.get(
      '/projects/:project_id/ingest-keys',
      {
        schema: {
          operationId: 'listIngestKeys',
          tags: ['ingest keys'],
          summary: "The project's ingest keys, by prefix (owners only)",
          security,
          params: ProjectScopedParams,
          response: { 200: IngestKeyListEnvelope, ...errorResponses(401, 403, 404, 422, 429) },
        },
      },
      async (request) => ({
        data: (await deps.ingestKeys.list(requireActor(request), request.params.project_id)).map(presentIngestKey),
      }),
    );

    app.delete(
      '/projects/:project_id/ingest-keys/:key_id',
      {
        schema: {
          operationId: 'revokeIngestKey',
          tags: ['ingest keys'],
          summary: 'Revoke an ingest key at once (owners only)',
          security,
          params: IngestKeyParams,
          response: { 200: IngestKeyEnvelope, ...errorResponses(401, 403, 404, 422, 429) },
        },
      },
      async (request) => {
        const key = await deps.ingestKeys.revoke(requireActor(request), request.params.project_id, request.params.key_id);
        return { data: presentIngestKey(key), message: 'Ingest key revoked' };
      },
    );
  };
}
