import { envelope } from '@repo/schemas';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { noRateLimit } from './server.js';
import { z } from 'zod';

const HealthResponse = envelope(
  z.object({
    status: z.enum(['ok', 'degraded']),
    version: z.string(),
    uptime_seconds: z.number(),
    database: z.object({
      status: z.enum(['up', 'down']),
      driver: z.enum(['pglite', 'postgres']),
      latency_ms: z.number(),
    }),
  }),
);

const LiveResponse = envelope(z.object({ status: z.literal('ok'), version: z.string(), uptime_seconds: z.number() }));

const ReadyResponse = envelope(
  z.object({
    status: z.enum(['ready', 'not_ready']),
    version: z.string(),
    database: z.object({
      status: z.enum(['up', 'down']),
      driver: z.enum(['pglite', 'postgres']),
      latency_ms: z.number(),
    }),
    schema: z.object({
      status: z.enum(['current', 'behind', 'unknown']),
      expected_migration: z.string(),
    }),
  }),
);

/**
 * The public health routes both services expose. `/health` (as it always was): version, uptime and
 * the database's state. `/health/live`: the process answers, whatever the database does (a
 * liveness probe must not restart pods for an outage they cannot fix). `/health/ready`: the
 * database answers and its schema is current (the newest migration is applied), so that a pod
 * started with `MIGRATE_ON_START=false` receives no traffic before the migration Job has run.
 */
export function healthRoutes(deps: {
  version: string;
  driver: 'pglite' | 'postgres';
  ping: () => Promise<{ ok: boolean; latencyMs: number }>;
  schemaStatus: () => Promise<{ current: boolean; expected: string; error?: string }>;
}): FastifyPluginAsyncZod {
  const started = Date.now();
  return async (app) => {
    app.get(
      '/health',
      {
        config: noRateLimit,
        schema: {
          operationId: 'health',
          tags: ['health'],
          summary: 'Service and database health (public; 503 when the database is unreachable)',
          security: [],
          response: { 200: HealthResponse, 503: HealthResponse },
        },
      },
      async (_request, reply) => {
        const db = await deps.ping();
        return reply.status(db.ok ? 200 : 503).send({
          data: {
            status: db.ok ? ('ok' as const) : ('degraded' as const),
            version: deps.version,
            uptime_seconds: Math.round((Date.now() - started) / 1000),
            database: { status: db.ok ? ('up' as const) : ('down' as const), driver: deps.driver, latency_ms: db.latencyMs },
          },
        });
      },
    );

    app.get(
      '/health/live',
      {
        config: noRateLimit,
        schema: {
          operationId: 'healthLive',
          tags: ['health'],
          summary: 'Liveness (public): the process answers; never touches the database',
          security: [],
          response: { 200: LiveResponse },
        },
      },
      async () => ({
        data: { status: 'ok' as const, version: deps.version, uptime_seconds: Math.round((Date.now() - started) / 1000) },
      }),
    );

    app.get(
      '/health/ready',
      {
        config: noRateLimit,
        schema: {
          operationId: 'healthReady',
          tags: ['health'],
          summary: 'Readiness (public): 503 until the database answers and its schema is current',
          security: [],
          response: { 200: ReadyResponse, 503: ReadyResponse },
        },
      },
      async (_request, reply) => {
        const [db, schema] = await Promise.all([deps.ping(), deps.schemaStatus()]);
        const ready = db.ok && schema.current;
        return reply.status(ready ? 200 : 503).send({
          data: {
            status: ready ? ('ready' as const) : ('not_ready' as const),
            version: deps.version,
            database: { status: db.ok ? ('up' as const) : ('down' as const), driver: deps.driver, latency_ms: db.latencyMs },
            schema: {
              // Unknown when the question could not be asked (the database is down).
              status: schema.current ? ('current' as const) : schema.error !== undefined || !db.ok ? ('unknown' as const) : ('behind' as const),
              expected_migration: schema.expected,
            },
          },
        });
      },
    );
  };
}
