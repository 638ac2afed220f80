// The reference the common read path is measured against: the least a Node service does for the
// same request. Bare Fastify, the same JWT plugin (@fastify/jwt, HS256), and postgres.js: the
// session looked up by its key (joined to its user, with the same liveness conditions as the
// apps), then the caller's rows by key (or a log by its id), answered in the same envelope. Run as
// its own process by an app's bench; reads BARE_APP (logtracker | marketplace), DATABASE_URL,
// JWT_SECRET, PORT, HOST.
import { createRequire } from 'node:module';

const require = createRequire(new URL('../packages/auth/package.json', import.meta.url));
const Fastify = require('fastify');
const jwt = require('@fastify/jwt');
const postgres = createRequire(new URL('../packages/db/package.json', import.meta.url))('postgres');

const sql = postgres(process.env.DATABASE_URL, {
  max: Number(process.env.DATABASE_POOL_SIZE ?? 10),
  // Each app's tables live in its own schema (docs/operations.md: one database for both apps).
  connection: { search_path: `"${process.env.BARE_APP === 'marketplace' ? 'marketplace' : 'logtracker'}", public` },
});
const app = Fastify({ logger: false });
await app.register(jwt, { secret: process.env.JWT_SECRET, verify: { algorithms: ['HS256'] } });

const marketplace = process.env.BARE_APP === 'marketplace';

/** The caller's user id, from a valid token of a live session; undefined otherwise. */
async function caller(request) {
  let claims;
  try {
    claims = await request.jwtVerify();
  } catch {
    return undefined;
  }
  const userId = Number(claims.sub);
  const [row] = marketplace
    ? await sql`select u.role from sessions s join users u on u.id = s.user_id
                 where s.id = ${claims.sid} and s.user_id = ${userId} and s.revoked_at is null
                   and s.last_used_at > now() - make_interval(days => 30)
                   and u.status = 'active' and u.deleted_at is null limit 1`
    : await sql`select s.user_id from sessions s
                 where s.id = ${claims.sid} and s.user_id = ${userId} and s.revoked_at is null
                   and s.last_used_at > now() - make_interval(days => 30) limit 1`;
  return row ? userId : undefined;
}

function route(path, handler) {
  app.get(path, async (request, reply) => {
    const userId = await caller(request);
    if (userId === undefined) return reply.status(401).send({ error: 'unauthenticated', message: 'A valid bearer token is required' });
    return handler(userId, request, reply);
  });
}

const meta = (total) => ({ current_page: 1, per_page: 20, total: Number(total), last_page: Math.max(1, Math.ceil(Number(total) / 20)) });

if (marketplace) {
  route('/api/v1/auth/me', async (userId) => {
    const [user] = await sql`select * from users where id = ${userId}`;
    return { data: user };
  });
  route('/api/v1/vehicles', async (userId) => {
    // The page and the garage's total in one statement, as the app reads them (first page: never
    // past the end, so never the app's count apart).
    const rows = await sql`select *, (count(*) over ())::int as total from vehicles
                            where owner_id = ${userId} and deleted_at is null order by created_at desc, id desc limit 20`;
    return { data: rows.map(({ total: _total, ...vehicle }) => vehicle), meta: meta(rows[0]?.total ?? 0) };
  });
  route('/api/v1/appointments', async (userId) => {
    const [rows, [{ n }]] = await Promise.all([
      // The app's query: the page's ids first, then the two parties, the prestataire's profile, the
      // vehicle and the service of those rows.
      sql`select a.*, c.id as client_id, c.first_name as client_first_name, c.last_name as client_last_name,
                 u.first_name, u.last_name, p.business_name, p.timezone,
                 v.make, v.model, v.year, v.plate, s.name as service_name
            from appointments a join users c on c.id = a.client_id join users u on u.id = a.prestataire_id
            left join prestataire_profiles p on p.user_id = a.prestataire_id
            join vehicles v on v.id = a.vehicle_id join services s on s.id = a.service_id
           where a.id in (select id from appointments where client_id = ${userId} order by starts_at desc, id desc limit 20 offset 0)
           order by a.starts_at desc, a.id desc`,
      sql`select count(*)::int as n from appointments where client_id = ${userId}`,
    ]);
    return { data: rows, meta: meta(n) };
  });
} else {
  route('/api/user', async (userId) => {
    const [user] = await sql`select id, name, email, created_at, updated_at from users where id = ${userId}`;
    return { data: user };
  });
  route('/api/logs/:id', async (userId, request, reply) => {
    // A log of a project the caller is a member of, with its pattern, in one statement: every daily
    // partition probed by the id (the app's log_for_member probes the days whose ids hold it first).
    const id = Number(request.params.id);
    const [log] = Number.isSafeInteger(id)
      ? await sql`select l.id, l.project_id, l.level, l.message, l.context, l.source, l."timestamp", l.received_at,
                         (select lp.pattern_id from log_patterns lp
                           where lp.project_id = l.project_id and lp."timestamp" = l."timestamp" and lp.log_id = l.id limit 1) as pattern_id
                    from logs l
                   where l.id = ${id}
                     and exists (select 1 from project_members m where m.project_id = l.project_id and m.user_id = ${userId})
                   limit 1`
      : [];
    if (!log) return reply.status(404).send({ error: 'not_found', message: 'Log not found' });
    return { data: log };
  });
  route('/api/projects', async (userId) => {
    // The page and the total in one statement, as the app reads them, and each project's
    // log_count summed from its daily rollups, as the app answers it.
    const rows = await sql`select p.id, p.name, p.description, p.repository_url, m.role, p.created_at, p.updated_at,
                                  greatest(0, coalesce((select sum(c.count) from log_level_counts c
                                                         where c.project_id = p.id and c.grain = 'day'), 0))::bigint as log_count,
                                  (count(*) over ())::int as total
                             from projects p join project_members m on m.project_id = p.id
                            where m.user_id = ${userId} order by p.created_at desc, p.id desc limit 20`;
    return { data: rows.map(({ total: _total, ...project }) => project), meta: meta(rows[0]?.total ?? 0) };
  });
}
app.get('/health', async () => ({ ok: true }));

const close = async () => {
  await app.close();
  await sql.end({ timeout: 5 });
  process.exit(0);
};
process.on('SIGTERM', close);
process.on('SIGINT', close);
await app.listen({ host: process.env.HOST ?? '127.0.0.1', port: Number(process.env.PORT ?? 0) });
