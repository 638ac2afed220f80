import type { FastifyRequest } from 'fastify';
import { AppError, gunzipBody, type FastifyPluginAsyncZod } from '@repo/http';
import { errorResponses } from '@repo/schemas';
import type { WriterAuth } from '../logs/index.js';
import type { IngestMetrics, LogsService } from '../logs/index.js';
import { mapExportRequest } from './otlp.mapping.js';
import { decodeExportRequest, encodeErrorStatus, encodeExportResponse, PROTOBUF } from './otlp.protobuf.js';
import { ExportLogsRequest, ExportLogsResponse } from './otlp.schemas.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The route finds text PostgreSQL cannot store in its own body and answers it its own way
     * (OTLP refuses the record alone, in `partialSuccess`), instead of a 422 for the whole body.
     */
    checksOwnText?: boolean;
  }
}

const JSON_TYPE = 'application/json';

/** The media type of the request, without parameters (`application/json; charset=utf-8`). */
function mediaTypeOf(request: FastifyRequest): string {
  return (request.headers['content-type'] ?? '').split(';', 1)[0]!.trim().toLowerCase();
}

/**
 * OTLP/HTTP logs receiver, JSON or binary protobuf, either one optionally gzip-compressed, so any
 * OpenTelemetry SDK or collector ships straight in with an ingest key: `Authorization: Bearer ltk_…`
 * or `X-Ingest-Key`. Each request is answered in its own encoding, as OTLP/HTTP requires.
 */
export function otlpRoutes(deps: {
  logs: LogsService;
  writerAuth: WriterAuth;
  maxRecords: number;
  maxBytes: number;
  ingest: IngestMetrics;
}): FastifyPluginAsyncZod {
  return async (app) => {
    // The protobuf exporters' default (the SDK's exporter-logs-otlp-proto, the Collector's
    // otlphttp). Decoded into the JSON form, then validated and mapped exactly as JSON is; the
    // route's body limit bounds the bytes read, after gunzip.
    app.addContentTypeParser(PROTOBUF, { parseAs: 'buffer' }, (_request, body, done) => {
      let decoded: unknown;
      try {
        decoded = decodeExportRequest(body as Buffer);
      } catch (error) {
        const reason = error instanceof Error ? error.message : String(error);
        done(new AppError('bad_request', `The request body is not a protobuf ExportLogsServiceRequest (${reason})`));
        return;
      }
      done(null, decoded);
    });

    app.post(
      '/v1/logs',
      {
        bodyLimit: deps.maxBytes,
        // A record with text PostgreSQL cannot store is refused alone (mapping), the rest stored.
        config: { ingestKey: true, checksOwnText: true },
        onResponse: deps.ingest.refusals('otlp'),
        onRequest: async (request) => {
          await deps.writerAuth.authenticateWriter(request);
          if (!request.ingestPrincipal) {
            throw new AppError('forbidden', 'OTLP export takes a project ingest key, not a user token');
          }
        },
        // The media type is judged before a byte is read (OTLP/HTTP answers any other with 415).
        // Collectors compress by default (the Collector's otlphttp exporter sends gzip). The body
        // limit counts the decompressed bytes, so a small compressed bomb still answers 413.
        preParsing: async (request, _reply, payload) => {
          const type = mediaTypeOf(request);
          if (type !== JSON_TYPE && type !== PROTOBUF) {
            const sent = type ? `Content-Type "${type}" is not supported` : 'Content-Type is missing';
            throw new AppError('unsupported_media_type', `${sent}; send ${JSON_TYPE} or ${PROTOBUF}`);
          }
          return gunzipBody(request, payload);
        },
        // A protobuf request is answered in protobuf, whatever answers it (the handler, a hook,
        // the error handler): ExportLogsServiceResponse on success, and google.rpc.Status for an
        // error, as OTLP/HTTP prescribes, its message the envelope's with the fields that failed.
        onSend: async (request, reply, payload) => {
          if (mediaTypeOf(request) !== PROTOBUF || typeof payload !== 'string') return payload;
          let body: unknown;
          try {
            body = JSON.parse(payload);
          } catch {
            // Not an answer of this route's (every one is JSON until here): left as it is.
            return payload;
          }
          reply.type(PROTOBUF);
          return reply.statusCode < 400
            ? encodeExportResponse(body as ExportLogsResponse)
            : encodeErrorStatus(reply.statusCode, body as Parameters<typeof encodeErrorStatus>[1]);
        },
        schema: {
          operationId: 'otlpExportLogs',
          tags: ['otlp'],
          summary: 'OTLP/HTTP logs export (JSON or protobuf, optionally gzip), authenticated by a project ingest key',
          description:
            'Takes `application/json` or `application/x-protobuf` (ExportLogsServiceRequest), optionally with `Content-Encoding: gzip`, and answers in the same encoding; any other content type answers 415. Severity numbers map to the four levels, attributes to `context`, the resource `service.name` to `source`. Records that cannot be stored (no body, a time outside 1970–2100, a NUL or an unpaired surrogate in their text) are counted in `partialSuccess`, the rest stored. Errors to a protobuf request are a `google.rpc.Status`.',
          security: [{ ingestKey: [] }],
          consumes: [JSON_TYPE, PROTOBUF],
          produces: [JSON_TYPE, PROTOBUF],
          body: ExportLogsRequest,
          response: { 200: ExportLogsResponse, ...errorResponses(400, 401, 403, 413, 415, 422, 429) },
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
        deps.ingest.rejectedRecords('otlp', mapped.rejected);
        if (mapped.rejected === 0) return {};
        return {
          partialSuccess: { rejectedLogRecords: mapped.rejected, errorMessage: mapped.errors.join('; ') },
        };
      },
    );
  };
}
