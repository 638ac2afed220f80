import { arrayLiteral, executeCount, queryRows, timestamptz } from '@repo/db';
import { and, desc, eq, inArray, sql } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { logPatterns, minerStates, patterns, type LogLevel } from '../../db/schema/index.js';
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

/** A log as the miner reads it: its key (the timestamp to the microsecond, as text) and its text. */
export type UnminedLog = {
  id: number | string;
  ts: string;
  level: LogLevel;
  message: string;
};

/**
 * The next page of the range's logs in id order (keyset), each with its text when it has no
 * pattern yet and null when it has one: the caller keeps paging until a page comes back short.
 * Each log's tag is probed by its id, so a page costs the same however many logs are tagged
 * (an anti-join would read every tag of the project for each page).
 */
export function logsToMine(db: DbTx, projectId: number, from: Date, to: Date, afterId: number, limit: number) {
  return queryRows<{ id: number | string; ts: string; level: LogLevel; message: string | null }>(
    db,
    sql`select p.id, to_char(p.timestamp at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as ts, p.level,
               case when exists (select 1 from log_patterns lp
                                  where lp.project_id = ${projectId} and lp.log_id = p.id)
                    then null else p.message end as message
          from (select l.id, l.timestamp, l.level, l.message
                  from logs l
                 where l.project_id = ${projectId} and l.timestamp >= ${timestamptz(from)} and l.timestamp < ${timestamptz(to)}
                   and l.id > ${afterId}
                 order by l.id
                 limit ${limit}) p
         order by p.id`,
  );
}

/** Creates the patterns of new clusters and refreshes templates and samples; answers cluster id → pattern id. */
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
      .values(chunk.map((c) => ({ projectId, clusterId: c.clusterId, template: c.template, sample: c.sample || null })))
      .onConflictDoUpdate({
        target: [patterns.projectId, patterns.clusterId],
        set: {
          template: sql`excluded.template`,
          sample: sql`coalesce(excluded.sample, ${patterns.sample})`,
          updatedAt: sql`now()`,
        },
      })
      .returning({ id: patterns.id, clusterId: patterns.clusterId });
    for (const r of rows) ids.set(r.clusterId, r.id);
  }
  return ids;
}

/** Tags logs with their patterns: one narrow row each, a few thousand rows per statement. */
export async function tagLogs(db: DbTx, projectId: number, tags: { log: UnminedLog; patternId: number }[]) {
  for (let i = 0; i < tags.length; i += TAG_CHUNK) {
    const chunk = tags.slice(i, i + TAG_CHUNK);
    await db.execute(
      sql`insert into ${logPatterns} (project_id, timestamp, log_id, level, pattern_id)
          select ${projectId}, t.ts, t.id, t.level, t.pattern_id
            from unnest(${arrayLiteral(chunk.map((t) => t.log.ts))}::timestamptz[],
                        ${arrayLiteral(chunk.map((t) => t.log.id))}::bigint[],
                        ${arrayLiteral(chunk.map((t) => t.log.level))}::text[],
                        ${arrayLiteral(chunk.map((t) => t.patternId))}::int[])
                 as t(ts, id, level, pattern_id)
          on conflict (project_id, log_id) do update set pattern_id = excluded.pattern_id`,
    );
  }
}

const TAG_CHUNK = 1_000;


export function listProjectPatterns(db: DbTx, projectId: number) {
  return db
    .select({ id: patterns.id, clusterId: patterns.clusterId, template: patterns.template })
    .from(patterns)
    .where(eq(patterns.projectId, projectId));
}

/** A cluster the miner merged into another: its logs follow, its pattern goes. */
export async function mergePattern(db: DbTx, projectId: number, fromPatternId: number, toPatternId: number) {
  await db
    .update(logPatterns)
    .set({ patternId: toPatternId })
    .where(and(eq(logPatterns.projectId, projectId), eq(logPatterns.patternId, fromPatternId)));
  await db.delete(patterns).where(and(eq(patterns.projectId, projectId), eq(patterns.id, fromPatternId)));
}

/** Recounts patterns from their tags: counts stay exact however often a range is analysed. */
export async function refreshPatternStats(db: DbTx, projectId: number, patternIds: number[]) {
  for (let i = 0; i < patternIds.length; i += 500) {
    const chunk = patternIds.slice(i, i + 500);
    await db.execute(
      sql`update patterns p
             set count = s.n, levels = s.levels, first_seen = s.first_seen, last_seen = s.last_seen, updated_at = now()
            from (select pattern_id, count(*) as n, jsonb_agg(distinct level) as levels,
                         min(timestamp) as first_seen, max(timestamp) as last_seen
                    from log_patterns
                   where project_id = ${projectId} and pattern_id = any(${arrayLiteral(chunk)}::int[])
                   group by pattern_id) s
           where p.id = s.pattern_id and p.project_id = ${projectId}`,
    );
  }
}

/** The pattern of each of these logs that has one. */
export async function patternsOfLogs(db: DbTx, projectId: number, logIds: number[]) {
  if (logIds.length === 0) return new Map<number, number>();
  const rows = await queryRows<{ log_id: number | string; pattern_id: number }>(
    db,
    sql`select log_id, pattern_id from log_patterns
         where project_id = ${projectId} and log_id = any(${arrayLiteral(logIds)}::bigint[])`,
  );
  return new Map(rows.map((r) => [Number(r.log_id), r.pattern_id]));
}

/**
 * The tags of a project's logs older than the cutoff go with the logs (retention): one statement,
 * as nothing but mining writes these rows and it writes other ones.
 */
export function deleteExpiredTags(db: DbTx, projectId: number, cutoff: Date) {
  return executeCount(db, sql`delete from log_patterns where project_id = ${projectId} and timestamp < ${timestamptz(cutoff)}`);
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
