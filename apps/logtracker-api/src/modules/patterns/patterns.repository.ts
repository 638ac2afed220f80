import { arrayLiteral, copyText, queryRows, sqlState, timestamptz, withGenericPlan } from '@repo/db';
import { and, desc, eq, inArray, sql, type SQL } from 'drizzle-orm';
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

/** Where a page of the range's logs ends: its last log's timestamp (as text, to the microsecond) and id. */
export interface MiningCursor {
  ts: string;
  id: number | string;
}

/** A log of the range: its text when it has no pattern yet, its pattern when it has one. */
export type MiningRow = { id: number | string; ts: string; level: LogLevel } & (
  | { message: string; pattern_id: null }
  | { message: null; pattern_id: number }
);

/**
 * The next page of the range's logs in (timestamp, id) order, after the cursor, each with its text
 * when it has no pattern yet and its pattern when it has one: the caller keeps paging until a page
 * comes back short. The page is a range of the (project, timestamp, id) index, so its cost does not
 * depend on other projects' logs or on how far the run has gone; the tags of the page are one range
 * of the tags' (project, timestamp, log id) key, read beside it: a first analysis finds none there
 * at the cost of one index descent, where a probe per log cost a third of the read.
 */
export function logsToMine(db: DbTx, projectId: number, from: Date, to: Date, after: MiningCursor | undefined, limit: number) {
  // Ids start at 1: (from, 0) comes before every log of the range.
  const afterTs = after ? after.ts : from.toISOString();
  const afterId = after ? after.id : 0;
  const page = sql`select l.id, to_char(l.timestamp at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as ts, l.level, l.message,
                          null::int as pattern_id
                     from logs l
                    where l.project_id = ${projectId}
                      and l.timestamp >= ${timestamptz(from)} and l.timestamp < ${timestamptz(to)}
                      and (l.timestamp, l.id) > (${afterTs}::timestamptz, ${afterId}::bigint)
                    -- Ascending with nulls first: the (project, timestamp desc nulls last, id desc
                    -- nulls last) index read backwards, no sort.
                    order by l.timestamp nulls first, l.id nulls first
                    limit ${limit}`;
  // Planned generically: to a plan made for its values, a partition whose logs the statistics have
  // not seen yet (a burst, a first analysis) looks empty, and a scan and sort of it can win. The
  // generic plan reads the page off the index, however stale the statistics.
  return withGenericPlan(db, async (tx) => {
    const logs = await queryRows<MiningRow>(tx, page);
    const first = logs[0];
    const last = logs.at(-1);
    if (!first || !last) return logs;
    const tags = await queryRows<{ log_id: number | string; pattern_id: number }>(
      tx,
      sql`select log_id, pattern_id from log_patterns
           where project_id = ${projectId} and timestamp >= ${first.ts}::timestamptz and timestamp <= ${last.ts}::timestamptz`,
    );
    // The rows are the driver's own objects: their pattern is set in place.
    const patternOf = new Map(tags.map((t) => [String(t.log_id), t.pattern_id]));
    for (const log of logs as { id: number | string; message: string | null; pattern_id: number | null }[]) {
      const patternId = patternOf.get(String(log.id));
      log.pattern_id = patternId ?? null;
      if (patternId !== undefined) log.message = null;
    }
    return logs;
  });
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

export interface PatternTag {
  log: UnminedLog;
  patternId: number;
}

/**
 * An array literal of values that need no quoting: numbers, ids, level names and the timestamps the
 * mining read wrote (`2026-11-25T19:15:51.782692Z`). A million tags go through here per large run.
 */
const bareArray = (values: readonly (string | number)[]) => `{${values.join(',')}}`;

const insertTagsSql = (projectId: number, tags: PatternTag[], onConflict: SQL) =>
  sql`insert into ${logPatterns} (project_id, timestamp, log_id, level, pattern_id)
      select ${projectId}, t.ts, t.id, t.level, t.pattern_id
        from unnest(${bareArray(tags.map((t) => t.log.ts))}::timestamptz[],
                    ${bareArray(tags.map((t) => t.log.id))}::bigint[],
                    ${bareArray(tags.map((t) => t.log.level))}::text[],
                    ${bareArray(tags.map((t) => t.patternId))}::int[])
             as t(ts, id, level, pattern_id)
      ${onConflict}`;

/** Tags per INSERT: small enough that other work on an embedded database waits little between them. */
const TAG_CHUNK = 1_000;

const TAG_COLUMNS = ['project_id', 'timestamp', 'log_id', 'level', 'pattern_id'] as const;

/**
 * Tags logs that had no pattern when they were read: one narrow row each. On PostgreSQL the page
 * goes in one COPY (half the server's time of an INSERT of the same rows), elsewhere a thousand
 * rows per INSERT. A log another run tagged meanwhile keeps its tag: the rows are then inserted
 * with `ON CONFLICT DO NOTHING`. Answers the tags written, which the pattern counts take in.
 */
export async function tagLogs(db: DbTx, projectId: number, tags: PatternTag[]): Promise<PatternTag[]> {
  let conflicted = false;
  try {
    // Numbers, level names and timestamps as the mining read wrote them: nothing to escape.
    let text = '';
    for (const t of tags) text += `${projectId}\t${t.log.ts}\t${t.log.id}\t${t.log.level}\t${t.patternId}\n`;
    if (await copyText(db, 'log_patterns', TAG_COLUMNS, text)) return tags;
  } catch (error) {
    if (sqlState(error) !== '23505') throw error;
    conflicted = true;
  }
  const written: PatternTag[] = [];
  for (let i = 0; i < tags.length; i += TAG_CHUNK) {
    const chunk = tags.slice(i, i + TAG_CHUNK);
    if (!conflicted) {
      try {
        // No conflict clause on the common path: it costs a third more per row.
        await db.execute(insertTagsSql(projectId, chunk, sql``));
        written.push(...chunk);
        continue;
      } catch (error) {
        if (sqlState(error) !== '23505') throw error;
      }
    }
    const rows = await queryRows<{ log_id: number | string }>(
      db,
      insertTagsSql(projectId, chunk, sql`on conflict (project_id, timestamp, log_id) do nothing returning log_id`),
    );
    const ids = new Set(rows.map((r) => String(r.log_id)));
    written.push(...chunk.filter((t) => ids.has(String(t.log.id))));
  }
  return written;
}

/** What a run adds to a pattern: its new tags, their levels and their time span. */
export interface PatternIncrement {
  patternId: number;
  count: number;
  levels: LogLevel[];
  firstSeen: string;
  lastSeen: string;
}

/**
 * The set clause folding one row's counts, levels and first and last sightings into a pattern's:
 * `into` and `from` name the pattern and a row with the same columns.
 */
const foldStats = (into: string, from: string) =>
  sql.raw(`count = ${into}.count + ${from}.count,
           levels = (select coalesce(jsonb_agg(distinct l order by l), '[]'::jsonb)
                       from jsonb_array_elements_text(${into}.levels || ${from}.levels) as l),
           first_seen = least(${into}.first_seen, ${from}.first_seen),
           last_seen = greatest(${into}.last_seen, ${from}.last_seen),
           updated_at = now()`);

/**
 * Adds what a run tagged to its patterns' counts, levels and first and last sightings, in one
 * statement: counts follow the tags written, never a recount of the project's history.
 */
export async function addPatternStats(db: DbTx, projectId: number, increments: PatternIncrement[]) {
  if (increments.length === 0) return;
  const rows = increments.map((i) => ({ id: i.patternId, count: i.count, levels: i.levels, first_seen: i.firstSeen, last_seen: i.lastSeen }));
  await db.execute(
    sql`update patterns p set ${foldStats('p', 's')}
          from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
               as s(id int, count bigint, levels jsonb, first_seen timestamptz, last_seen timestamptz)
         where p.id = s.id and p.project_id = ${projectId}`,
  );
}

export function listProjectPatterns(db: DbTx, projectId: number) {
  return db
    .select({ id: patterns.id, clusterId: patterns.clusterId, template: patterns.template })
    .from(patterns)
    .where(eq(patterns.projectId, projectId));
}

/** A cluster the miner merged into another: its logs and its counts follow, its pattern goes. */
export async function mergePattern(db: DbTx, projectId: number, fromPatternId: number, toPatternId: number) {
  await db
    .update(logPatterns)
    .set({ patternId: toPatternId })
    .where(and(eq(logPatterns.projectId, projectId), eq(logPatterns.patternId, fromPatternId)));
  await db.execute(
    sql`update patterns t set ${foldStats('t', 'f')}
          from patterns f
         where t.project_id = ${projectId} and t.id = ${toPatternId}
           and f.project_id = ${projectId} and f.id = ${fromPatternId}`,
  );
  await db.delete(patterns).where(and(eq(patterns.projectId, projectId), eq(patterns.id, fromPatternId)));
}

/**
 * The pattern of each of these listed logs that has one, by the tags' key: each log's time to the
 * microsecond (as the list reads it) and its id. One probe of the key per log, whatever the number
 * of the project's tags (a join the planner was free to choose scanned them all: 170 ms over a
 * million).
 */
export async function patternsOfLogs(db: DbTx, projectId: number, found: { id: number; cursorTime: string }[]) {
  if (found.length === 0) return new Map<number, number>();
  const rows = await queryRows<{ log_id: number | string; pattern_id: number }>(
    db,
    sql`select u.id as log_id, t.pattern_id
          from unnest(${arrayLiteral(found.map((l) => l.id))}::bigint[],
                      ${arrayLiteral(found.map((l) => l.cursorTime))}::timestamptz[]) as u(id, at)
          cross join lateral (select lp.pattern_id from log_patterns lp
                               where lp.project_id = ${projectId} and lp.timestamp = u.at and lp.log_id = u.id
                               limit 1) t`,
  );
  return new Map(rows.map((r) => [Number(r.log_id), r.pattern_id]));
}

/**
 * The pattern of the log in these columns, or null, as a scalar subquery of the statement that
 * reads the log: its tag found by the key, in the same round trip.
 */
export function patternOfLogColumn(log: { projectId: SQL; timestamp: SQL; id: SQL }): SQL<number | null> {
  return sql<number | null>`(select lp.pattern_id from log_patterns lp
                              where lp.project_id = ${log.projectId} and lp.timestamp = ${log.timestamp} and lp.log_id = ${log.id}
                              limit 1)`;
}

/**
 * The tags of a project's logs older than the cutoff go with the logs (retention), and their
 * patterns' counts drop by as many, in one statement: nothing but mining writes these rows, and it
 * writes other ones. Answers the tags deleted.
 */
export async function deleteExpiredTags(db: DbTx, projectId: number, cutoff: Date) {
  const [row] = await queryRows<{ deleted: number | string }>(
    db,
    sql`with gone as (delete from log_patterns where project_id = ${projectId} and timestamp < ${timestamptz(cutoff)}
                      returning pattern_id),
             per_pattern as (select pattern_id, count(*) as n from gone group by pattern_id),
             counted as (update patterns p set count = greatest(p.count - c.n, 0), updated_at = now()
                           from per_pattern c
                          where p.project_id = ${projectId} and p.id = c.pattern_id
                         returning p.id)
        select coalesce(sum(n), 0) as deleted from per_pattern`,
  );
  return Number(row?.deleted ?? 0);
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

/** Which of these patterns were first seen at or after the instant: new within a report's range. */
export async function patternsFirstSeenSince(db: DbTx, projectId: number, since: Date, ids: number[]) {
  if (ids.length === 0) return new Set<number>();
  const rows = await queryRows<{ id: number }>(
    db,
    sql`select id from patterns
         where project_id = ${projectId} and id = any(${arrayLiteral(ids)}::int[]) and first_seen >= ${timestamptz(since)}`,
  );
  return new Set(rows.map((r) => r.id));
}
