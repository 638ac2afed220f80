import { queryRows, timestamptz } from '@repo/db';
import { and, desc, eq, inArray, sql } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { logs, minerStates, patterns } from '../../db/schema/index.js';
import type { MinerState } from './drain.js';

export async function loadMinerState(db: DbTx, projectId: number) {
  const [row] = await db.select({ state: minerStates.state }).from(minerStates).where(eq(minerStates.projectId, projectId));
  return row?.state as MinerState | undefined;
}

export async function saveMinerState(db: DbTx, projectId: number, state: MinerState) {
  await db
    .insert(minerStates)
    .values({ projectId, state })
    .onConflictDoUpdate({ target: minerStates.projectId, set: { state, updatedAt: sql`now()` } });
}

/** Logs of the range without a pattern yet, in id order, one page at a time (keyset). */
export function unassignedLogs(db: DbTx, projectId: number, from: Date, to: Date, afterId: number, limit: number) {
  return queryRows<{ id: number | string; message: string }>(
    db,
    sql`select id, message from logs
         where project_id = ${projectId} and timestamp >= ${timestamptz(from)} and timestamp < ${timestamptz(to)}
           and pattern_id is null and id > ${afterId}
         order by id
         limit ${limit}`,
  );
}

/** Creates the patterns of new clusters and refreshes templates; answers cluster id → pattern id. */
export async function upsertPatterns(
  db: DbTx,
  projectId: number,
  clusters: { clusterId: number; template: string; sample: string }[],
) {
  const ids = new Map<number, number>();
  for (let i = 0; i < clusters.length; i += 500) {
    const chunk = clusters.slice(i, i + 500);
    const rows = await db
      .insert(patterns)
      .values(chunk.map((c) => ({ projectId, clusterId: c.clusterId, template: c.template, sample: c.sample })))
      .onConflictDoUpdate({
        target: [patterns.projectId, patterns.clusterId],
        set: { template: sql`excluded.template`, updatedAt: sql`now()` },
      })
      .returning({ id: patterns.id, clusterId: patterns.clusterId });
    for (const r of rows) ids.set(r.clusterId, r.id);
  }
  return ids;
}

/** Sets pattern ids on logs, a few thousand rows per statement so no statement holds the table long. */
export async function assignPatterns(db: DbTx, projectId: number, pairs: { logId: number; patternId: number }[]) {
  for (let i = 0; i < pairs.length; i += 2_000) {
    const chunk = pairs.slice(i, i + 2_000);
    const values = sql.join(
      chunk.map((p) => sql`(${p.logId}::bigint, ${p.patternId}::int)`),
      sql`, `,
    );
    await db.execute(
      sql`update logs set pattern_id = v.pattern_id
            from (values ${values}) as v(id, pattern_id)
           where logs.id = v.id and logs.project_id = ${projectId}`,
    );
  }
}

export function listProjectPatterns(db: DbTx, projectId: number) {
  return db
    .select({ id: patterns.id, clusterId: patterns.clusterId, template: patterns.template })
    .from(patterns)
    .where(eq(patterns.projectId, projectId));
}

/** A cluster the miner merged into another: its logs follow, its pattern goes. */
export async function mergePattern(db: DbTx, projectId: number, fromPatternId: number, toPatternId: number) {
  await db
    .update(logs)
    .set({ patternId: toPatternId })
    .where(and(eq(logs.projectId, projectId), eq(logs.patternId, fromPatternId)));
  await db.delete(patterns).where(and(eq(patterns.projectId, projectId), eq(patterns.id, fromPatternId)));
}

/** Recounts patterns from their logs: counts stay exact however often a range is analysed. */
export async function refreshPatternStats(db: DbTx, projectId: number, patternIds: number[]) {
  for (let i = 0; i < patternIds.length; i += 500) {
    const chunk = patternIds.slice(i, i + 500);
    const list = sql.join(
      chunk.map((id) => sql`${id}`),
      sql`, `,
    );
    await db.execute(
      sql`update patterns p
             set count = s.n, levels = s.levels, first_seen = s.first_seen, last_seen = s.last_seen,
                 sample = coalesce(s.sample, p.sample), updated_at = now()
            from (select pattern_id, count(*) as n, jsonb_agg(distinct level) as levels,
                         min(timestamp) as first_seen, max(timestamp) as last_seen,
                         (array_agg(message order by timestamp desc, id desc))[1] as sample
                    from logs
                   where project_id = ${projectId} and pattern_id in (${list})
                   group by pattern_id) s
           where p.id = s.pattern_id and p.project_id = ${projectId}`,
    );
  }
}

export function topPatterns(db: DbTx, projectId: number, limit: number) {
  return db
    .select()
    .from(patterns)
    .where(and(eq(patterns.projectId, projectId), sql`${patterns.count} > 0`))
    .orderBy(desc(patterns.count), patterns.id)
    .limit(limit);
}

export function patternsByIds(db: DbTx, projectId: number, ids: number[]) {
  if (ids.length === 0) return Promise.resolve([]);
  return db
    .select()
    .from(patterns)
    .where(and(eq(patterns.projectId, projectId), inArray(patterns.id, ids)));
}
