import { sql } from 'drizzle-orm';
import { queryRows } from '@repo/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANALYZE_MIN_ROWS, createLogStatisticsService } from '../src/modules/maintenance/log-statistics.service.js';
import { buildTestApp, createProject, createUser, type TestApp, type TestUser } from './helpers.js';

// The planner's statistics of the logs partitions follow a burst of ingest within seconds, with no
// manual ANALYZE (autovacuum would look a minute later).

let t: TestApp;
let owner: TestUser;

beforeAll(async () => {
  t = await buildTestApp({ RATE_LIMIT_AUTHENTICATED: '1000000', RATE_LIMIT_INGEST: '1000000' });
  owner = await createUser(t);
});
afterAll(async () => {
  await t.close();
});

/** The daily partition that holds logs of this instant, with what the server knows of it. */
async function partitionOfNow() {
  // reltuples is what the last ANALYZE counted (-1: never analysed), written to the catalogue at once.
  const [row] = await queryRows<{ name: string; counted: number }>(
    t.database.db,
    sql`select c.relname as name, c.reltuples::int as counted
          from pg_class c join pg_inherits i on i.inhrelid = c.oid
         where i.inhparent = 'logs'::regclass
           and pg_get_expr(c.relpartbound, c.oid) like 'FOR VALUES FROM (''' || to_char(now() at time zone 'UTC', 'YYYY-MM-DD') || '%'`,
  );
  return row;
}

async function ingest(projectId: number, count: number) {
  for (let sent = 0; sent < count; sent += 1000) {
    const logs = Array.from({ length: Math.min(1000, count - sent) }, (_, i) => ({
      level: 'warning',
      message: `timeout gateway for request r${sent + i} after ${i % 97} ms on node-${i % 5}`,
    }));
    const res = await t.app.inject({ method: 'POST', url: `/api/projects/${projectId}/logs/batch`, headers: owner.headers, payload: { logs } });
    expect(res.statusCode, res.body).toBe(201);
  }
}

async function waitFor<T>(probe: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

describe('logs statistics after a burst', () => {
  it('analyses the partition a burst grew, on its own, within seconds; not again for a few more rows', async () => {
    const project = await createProject(t, owner);
    const before = await partitionOfNow();
    expect(before).toBeDefined();
    before!.counted = Math.max(before!.counted, 0);
    await ingest(project.id, 8_000);
    const after = await waitFor(async () => {
      const p = await partitionOfNow();
      return p && p.counted >= before!.counted + ANALYZE_MIN_ROWS ? p : undefined;
    });
    expect(after.name).toBe(before!.name);
    // The statistics now know the project: its share of the partition is estimated from them.
    const [estimate] = await queryRows<Record<string, string>>(
      t.database.db,
      sql`explain select 1 from ${sql.identifier(after.name)} where project_id = ${project.id}`,
    );
    const rows = Number(/rows=(\d+)/.exec(Object.values(estimate ?? {})[0] ?? '')?.[1]);
    expect(rows).toBeGreaterThan(2_000);

    // A few hundred more rows are below the minimum of new rows: nothing to do.
    await ingest(project.id, 500);
    const statistics = createLogStatisticsService({ db: t.database.db });
    expect(await statistics.refresh()).toEqual([]);
  });
});
