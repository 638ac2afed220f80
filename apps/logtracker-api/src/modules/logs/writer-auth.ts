import { requireActor } from '@repo/auth';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { LogWriter } from './logs.service.js';
import { presentedIngestKey, type IngestKeysService, type IngestPrincipal } from '../ingest-keys/index.js';

declare module 'fastify' {
  interface FastifyRequest {
    ingestPrincipal: IngestPrincipal | null;
  }
}

/**
 * Authentication of the routes that take logs: an ingest key (CI pipelines, agents, OTLP
 * exporters) or a member's bearer token. An ingest key can do nothing else.
 */
export function createWriterAuth(app: FastifyInstance, ingestKeys: IngestKeysService) {
  if (!app.hasRequestDecorator('ingestPrincipal')) app.decorateRequest('ingestPrincipal', null);
  return {
    async authenticateWriter(request: FastifyRequest) {
      const key = presentedIngestKey(request);
      if (key) {
        request.ingestPrincipal = await ingestKeys.verify(key);
        return;
      }
      await app.auth.authenticate(request);
    },
    writerOf(request: FastifyRequest): LogWriter {
      return request.ingestPrincipal
        ? { kind: 'ingest-key', key: request.ingestPrincipal }
        : { kind: 'user', actor: requireActor(request) };
    },
  };
}

export type WriterAuth = ReturnType<typeof createWriterAuth>;
