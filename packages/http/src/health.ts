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

/** The public health route both services expose: version, uptime and the database's state. */
export function healthRoutes(deps: {
  version: string;
  driver: 'pglite' | 'postgres';
  ping: () => Promise<{ ok: boolean; latencyMs: number }>;
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
  };
}
