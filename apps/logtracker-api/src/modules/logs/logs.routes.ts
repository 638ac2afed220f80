import { whileAuthenticated } from '@repo/auth';
import { AppError, gunzipBody, isEncoded, type FastifyPluginAsyncZod, type ZodTypeProvider } from '@repo/http';
import { errorResponses } from '@repo/schemas';
import type { WriterAuth } from './writer-auth.js';
import { ProjectScopedParams } from '../projects/index.js';
import { BatchText, createBodyPool, readBody, scanBatch, validatePlain } from './batch-text.js';
import type { LogsService } from './logs.service.js';
import type { IngestMetrics } from './logs.metrics.js';
import {
  BatchBody,
  BatchEnvelope,
  ListLogsQuery,
  LogEntryBody,
  LogEnvelope,
  LogListEnvelope,
  LogParams,
  presentLog,
} from './logs.schemas.js';

const security = [{ bearerAuth: [] }];

const writerSecurity: Record<string, string[]>[] = [{ bearerAuth: [] }, { ingestKey: [] }];

export function logsRoutes(deps: {
  logs: LogsService;
  writerAuth: WriterAuth;
  batchMaxEntries: number;
  batchMaxBytes: number;
  ingest: IngestMetrics;
}): FastifyPluginAsyncZod {
  const { authenticateWriter, writerOf } = deps.writerAuth;
  return async (app) => {

    app.get(
      '/projects/:project_id/logs',
      {
        onRequest: app.auth.authenticate,
        // Reads only: the session is checked alongside them, and membership too (whileMember).
        config: { auth: { checkAlongside: true } },
        schema: {
          operationId: 'listLogs',
          tags: ['logs'],
          summary: 'Logs of a project, newest first, filtered and paginated',
          description:
            '`search` is a case-insensitive substring match on the message; `%`, `_` and `\\` are matched literally.',
          security,
          params: ProjectScopedParams,
          querystring: ListLogsQuery,
          response: { 200: LogListEnvelope, ...errorResponses(401, 404, 422, 429) },
        },
      },
      async (request) => {
        const { rows, meta } = await whileAuthenticated(request, (caller) => deps.logs.list(caller, request.params.project_id, request.query));
        return { data: rows.map(presentLog), meta };
      },
    );

    app.post(
      '/projects/:project_id/logs',
      {
        config: { ingestKey: true },
        onRequest: authenticateWriter,
        onResponse: deps.ingest.refusals('single'),
        schema: {
          operationId: 'createLog',
          tags: ['logs'],
          summary: 'Submit one log entry (a member, or an ingest key of the project)',
          security: writerSecurity,
          params: ProjectScopedParams,
          body: LogEntryBody,
          response: { 201: LogEnvelope, ...errorResponses(400, 401, 404, 413, 422, 429) },
        },
      },
      async (request, reply) => {
        const log = await deps.logs.create(writerOf(request), request.params.project_id, request.body);
        return reply.status(201).send({ data: presentLog(log), message: 'Log stored' });
      },
    );

    // Batches have a context of their own: their JSON parser keeps the body as bytes cut into
    // entries (BatchText), validated and stored a slice at a time when each is in its plainest
    // form; any other body is parsed whole and validated the ordinary way.
    await app.register(async (context) => {
      const batches = context.withTypeProvider<ZodTypeProvider>();
      const parseJson = batches.getDefaultJsonParser('error', 'error');
      batches.removeContentTypeParser('application/json');
      // Big bodies are read into a buffer lent by the pool, given back once the handler is done
      // with it (or here, once the body is parsed the ordinary way).
      const pool = createBodyPool(deps.batchMaxBytes);
      batches.addContentTypeParser('application/json', (request, payload, done) => {
        // A compressed body's Content-Length is not the length read (gunzipBody, preParsing).
        const declared = isEncoded(request) ? Number.NaN : Number(request.headers['content-length']);
        readBody(payload, declared, deps.batchMaxBytes, pool.take).then((bytes) => {
          const cut = scanBatch(bytes);
          // Too many entries: preValidation answers 413 without reading them.
          if (cut && (cut.count > deps.batchMaxEntries || validatePlain(cut))) return done(null, cut);
          const text = bytes.toString('utf8');
          pool.give(bytes);
          parseJson(request, text, done);
        }, done);
      });

      batches.post(
        '/projects/:project_id/logs/batch',
        {
          bodyLimit: deps.batchMaxBytes,
          config: { ingestKey: true },
          onRequest: authenticateWriter,
          onResponse: deps.ingest.refusals('batch'),
          // Shippers compress (the logtracker CLI's --gzip, Vector's HTTP sink): the body limit
          // counts the decompressed bytes.
          preParsing: async (request, _reply, payload) => gunzipBody(request, payload),
          // Counted before validation, so an oversized batch answers 413 without validating every entry.
          preValidation: async (request) => {
            const body = request.body as BatchText | { logs?: unknown } | undefined;
            const count = body instanceof BatchText ? body.count : body && Array.isArray(body.logs) ? body.logs.length : 0;
            if (count > deps.batchMaxEntries) {
              throw new AppError('payload_too_large', `A batch holds at most ${deps.batchMaxEntries} entries`);
            }
          },
          // A cut body the parser found valid in its plainest form passes as it is; any other body,
          // and every error, is BatchBody's (zod) to judge.
          validatorCompiler: (route) => {
            const full = batches.validatorCompiler!(route);
            if (route.httpPart !== 'body') return full;
            return (data) => (data instanceof BatchText && data.levels ? { value: data } : full(data));
          },
          schema: {
            operationId: 'createLogBatch',
            tags: ['logs'],
            summary: 'Submit many log entries at once (a member, or an ingest key); validated whole, all stored or none',
            description: `At most ${deps.batchMaxEntries} entries and ${deps.batchMaxBytes} bytes (decompressed: the body may be sent with \`Content-Encoding: gzip\`). One bad entry answers 422 naming \`logs.<i>.<field>\`, and nothing is stored. 201 is answered once the whole batch is committed. 503 (database unreachable) means the batch was not acknowledged: send it again after \`retry-after\` seconds. It was not stored, except when the connection dropped while the commit itself was in flight, in which case it may have been; entries that must not be counted twice need an id of their own in \`context\`.`,
            security: writerSecurity,
            params: ProjectScopedParams,
            body: BatchBody,
            response: { 201: BatchEnvelope, ...errorResponses(400, 401, 404, 413, 422, 429, 503) },
          },
        },
        async (request, reply) => {
          const body = request.body as BatchBody | BatchText;
          try {
            const result = await deps.logs.createBatch(writerOf(request), request.params.project_id, body);
            return reply.status(201).send({ data: result, message: `${result.accepted} logs stored` });
          } finally {
            if (body instanceof BatchText) pool.give(body.bytes);
          }
        },
      );
    });

    app.get(
      '/logs/:id',
      {
        onRequest: app.auth.authenticate,
        // Reads only: the session is checked alongside the read.
        config: { auth: { checkAlongside: true } },
        schema: {
          operationId: 'getLog',
          tags: ['logs'],
          summary: 'One log entry of a project the caller is a member of',
          security,
          params: LogParams,
          response: { 200: LogEnvelope, ...errorResponses(401, 404, 422, 429) },
        },
      },
      async (request) => ({ data: presentLog(await whileAuthenticated(request, (caller) => deps.logs.get(caller, request.params.id))) }),
    );
  };
}
