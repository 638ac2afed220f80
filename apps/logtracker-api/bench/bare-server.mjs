// The reference the log tracker's ingest is measured against: the least a Node service can do for
// the same request. Fastify, zod validation of the same shape as the app's (z.object, z.enum), and
// postgres.js inserting each batch with one multi-row INSERT, and each log posted alone with one
// INSERT answering its id, into bench_bare_logs, a table with the columns and indexes of `logs`
// (created by the bench), not partitioned, without triggers. Run as its own process by
// bench/run.mjs; reads DATABASE_URL, PORT and HOST.
import Fastify from 'fastify';
import { z } from 'zod';
import { postgres } from './dataset.mjs';

const Entry = z.object({
  level: z.enum(['error', 'warning', 'info', 'debug']),
  message: z.string().min(1).max(65_536),
  context: z.record(z.string(), z.unknown()).nullish(),
  timestamp: z.iso.datetime({ offset: true }).optional(),
  source: z.string().trim().min(1).max(255).nullish(),
});
const Batch = z.object({ logs: z.array(Entry).min(1).max(10_000) });

const sql = postgres(process.env.DATABASE_URL, { max: Number(process.env.DATABASE_POOL_SIZE ?? 10), connection: { search_path: '"logtracker", public' } });
const app = Fastify({ logger: false, bodyLimit: 5 * 1024 * 1024 });

const COLUMNS = ['project_id', 'level', 'message', 'context', 'source', 'timestamp', 'received_at'];

/** A validated entry as a row of bench_bare_logs. */
function toRow(projectId, entry, receivedAt) {
  return {
    project_id: Number(projectId),
    level: entry.level,
    message: entry.message,
    context: entry.context ?? null,
    source: entry.source ?? null,
    timestamp: entry.timestamp ? new Date(entry.timestamp) : receivedAt,
    received_at: receivedAt,
  };
}

app.get('/health', async () => ({ ok: true }));

app.post('/projects/:projectId/logs/batch', async (request, reply) => {
  const parsed = Batch.safeParse(request.body);
  if (!parsed.success) return reply.status(422).send({ message: 'invalid batch', issues: parsed.error.issues.slice(0, 5) });
  const receivedAt = new Date();
  const rows = parsed.data.logs.map((entry) => toRow(request.params.projectId, entry, receivedAt));
  await sql`insert into bench_bare_logs ${sql(rows, ...COLUMNS)}`;
  return reply.status(201).send({ data: { accepted: rows.length } });
});

app.post('/projects/:projectId/logs', async (request, reply) => {
  const parsed = Entry.safeParse(request.body);
  if (!parsed.success) return reply.status(422).send({ message: 'invalid log', issues: parsed.error.issues.slice(0, 5) });
  const [stored] = await sql`insert into bench_bare_logs ${sql(toRow(request.params.projectId, parsed.data, new Date()), ...COLUMNS)} returning id`;
  return reply.status(201).send({ data: { id: Number(stored.id), ...parsed.data } });
});

const close = async () => {
  await app.close();
  await sql.end({ timeout: 5 });
  process.exit(0);
};
process.on('SIGTERM', close);
process.on('SIGINT', close);

await app.listen({ host: process.env.HOST ?? '127.0.0.1', port: Number(process.env.PORT ?? 0) });
