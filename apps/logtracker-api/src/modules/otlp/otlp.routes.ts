import { createGunzip } from 'node:zlib';
import { AppError, type FastifyPluginAsyncZod } from '@repo/http';
import { errorResponses } from '@repo/schemas';
import type { WriterAuth } from '../ingest-keys/writer-auth.js';
import type { LogsService } from '../logs/logs.service.js';
import { mapExportRequest } from './otlp.mapping.js';
import { ExportLogsRequest, ExportLogsResponse } from './otlp.schemas.js';

/**
 * OTLP/HTTP logs receiver (JSON encoding), so any OpenTelemetry SDK or collector ships straight
 * in with an ingest key: `Authorization: Bearer ltk_…` or `X-Ingest-Key`.
 */
export function otlpRoutes(deps: {
  logs: LogsService;
  writerAuth: WriterAuth;
  maxRecords: number;
  maxBytes: number;
}): FastifyPluginAsyncZod {
  return async (app) => {
    app.post(
      '/v1/logs',
      {
        bodyLimit: deps.maxBytes,
        config: { ingestKey: true },
        onRequest: async (request) => {
          await deps.writerAuth.authenticateWriter(request);
          if (!request.ingestPrincipal) {
            throw new AppError('forbidden', 'OTLP export takes a project ingest key, not a user token');
          }
        },
        // Collectors compress by default (the Collector's otlphttp exporter sends gzip). The body
        // limit counts the decompressed bytes, so a small compressed bomb still answers 413.
        preParsing: async (request, _reply, payload) => {
          const encoding = (request.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
          if (encoding === 'identity') return payload;
          if (encoding !== 'gzip') {
            throw new AppError('bad_request', `Unsupported Content-Encoding "${encoding}"; send gzip or none`);
          }
          const gunzip: ReturnType<typeof createGunzip> & { receivedEncodedLength?: number } = createGunzip();
          let encodedLength = 0;
          payload.on('data', (chunk: Buffer) => {
            encodedLength += chunk.length;
            // Fastify compares this, not the decompressed length, with Content-Length.
            gunzip.receivedEncodedLength = encodedLength;
          });
          return payload.pipe(gunzip);
        },
        schema: {
          operationId: 'otlpExportLogs',
          tags: ['otlp'],
          summary: 'OTLP/HTTP logs export (JSON encoding), authenticated by a project ingest key',
          description:
            'Severity numbers map to the four levels, attributes to `context`, the resource `service.name` to `source`. Records that cannot be stored are counted in `partialSuccess`.',
          security: [{ ingestKey: [] }],
          body: ExportLogsRequest,
          response: { 200: ExportLogsResponse, ...errorResponses(400, 401, 403, 413, 422, 429) },
        },
      },
      async (request) => {
        const principal = request.ingestPrincipal;
        if (!principal) throw new AppError('unauthenticated', 'An ingest key is required');
        const mapped = mapExportRequest(request.body, principal.projectId, new Date());
        if (mapped.rows.length + mapped.rejected > deps.maxRecords) {
          throw new AppError('payload_too_large', `An export holds at most ${deps.maxRecords} log records`);
        }
        await deps.logs.storeMapped(deps.writerAuth.writerOf(request), principal.projectId, mapped.rows);
        if (mapped.rejected === 0) return {};
        return {
          partialSuccess: { rejectedLogRecords: mapped.rejected, errorMessage: mapped.errors.join('; ') },
        };
      },
    );
  };
}
