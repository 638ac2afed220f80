import { escapeLike, executeCount, queryRows, timestamptz, withTransaction } from '@repo/db';
import { and, eq, getTableColumns, gte, ilike, lte, sql, type SQL } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { logLevelCounts, logs, newestFirst, projects, ROLLUP_KEEP_DAYS, type Log, type LogLevel, type NewLog } from '../../db/schema/index.js';
import { SLICE_BYTES, type BatchText } from './batch-text.js';
import type { LogCursor } from './logs.schemas.js';

export interface LogFilters {
  level?: LogLevel;
  from?: Date;
  to?: Date;
  search?: string;
  patternId?: number;
  /** Keyset position: only logs after it in the newest-first order. */
  after?: LogCursor;
}

/** Beyond this many matches, counting exactly costs more than the page itself: estimate instead. */
export const EXACT_COUNT_LIMIT = 10_000;

/**
 * The planner's cost (its units, about one page read each) above which a search is not counted
 * exactly. A rare word in a million-log project costs about 1 000 and counts in a few
 * milliseconds; a common one combined with a level costs 25 000 and takes half a second.
 */
const EXACT_COUNT_MAX_COST = 10_000;

/**
 * A search reads the newest logs in index order when the planner expects at least this share of
 * them to match (a page within 10 000 rows); below, the trigram index finds the matches. About
 * where the two cost the same on a million-log project: reading a row in index order costs about
 * half of finding, fetching and sorting a match.
 */
const SEARCH_WALK_MIN_SHARE = 0.005;

/** Bounds of that read, in rows: twice what the estimate says a page needs, within these. */
const SEARCH_WALK_ROWS = { min: 2_000, max: 20_000 };

/**
 * The project's row, locked against deletion until the inserting transaction ends. logs has no
 * foreign key to projects: PostgreSQL checked it once per row, a quarter of the cost of a batch
 * insert. Joined to once per statement instead, it keeps the same guarantee: an insert into a
 * project that is gone stores nothing, and a project being deleted waits for the inserts under
 * way, then deletes their logs too (see deleteProject).
 */
function lockedProject(projectId: number): SQL {
  return sql`(select id from projects where id = ${projectId}::int for key share) as project`;
}

/** What an insert wrote: how many rows, and their ids in row order when they were asked for. */
export interface Inserted {
  count: number;
  ids?: number[];
}

/**
 * Reading the ids back (RETURNING) costs a tenth of a batch insert's database time; only the
 * live tail needs them.
 */
async function runInsert(db: DbTx, insert: SQL, withIds: boolean): Promise<Inserted> {
  if (!withIds) return { count: await executeCount(db, insert) };
  const rows = await queryRows<{ id: number | string }>(db, sql`${insert} returning id`);
  return { count: rows.length, ids: rows.map((r) => Number(r.id)) };
}

/**
 * Runs one insert per slice of JSON, all in one transaction when there is more than one: every
 * row of every slice is stored, or none. One slice needs no transaction, a statement being atomic.
 */
async function insertSlices(db: DbTx, slices: Iterator<string>, statement: (json: string) => SQL, withIds: boolean): Promise<Inserted> {
  const first = slices.next();
  if (first.done) return { count: 0, ids: withIds ? [] : undefined };
  const second = slices.next();
  if (second.done) return runInsert(db, statement(first.value), withIds);
  return withTransaction(db, async (tx) => {
    const total: Inserted = { count: 0, ids: withIds ? [] : undefined };
    for (let slice: IteratorResult<string> = first; !slice.done; slice = slice === first ? second : slices.next()) {
      const inserted = await runInsert(tx, statement(slice.value), withIds);
      total.count += inserted.count;
      total.ids?.push(...(inserted.ids ?? []));
    }
    return total;
  });
}

/** Rows as JSON arrays of about SLICE_BYTES each, serialised one slice at a time. */
function* jsonSlices(rows: NewLog[]): Generator<string> {
  let parts: string[] = [];
  let size = 0;
  for (const r of rows) {
    const part = JSON.stringify({
      level: r.level,
      message: r.message,
      context: r.context ?? null,
      source: r.source ?? null,
      timestamp: r.timestamp,
      received_at: r.receivedAt ?? new Date(),
    });
    parts.push(part);
    size += part.length + 1;
    if (size >= SLICE_BYTES) {
      yield `[${parts.join(',')}]`;
      parts = [];
      size = 0;
    }
  }
  if (parts.length > 0) yield `[${parts.join(',')}]`;
}

/**
 * Inserts rows of one project: each slice of about SLICE_BYTES travels as a single JSON parameter
 * that PostgreSQL unpacks with json_to_recordset. The statement text never changes, so it is
 * prepared once; this is as fast as a hand-built multi-row INSERT and much faster than building
 * one per batch with the query builder, and a big batch is never serialised whole. All rows or
 * none are stored; nothing when the project is gone.
 */
export function insertLogs(db: DbTx, projectId: number, rows: NewLog[], withIds: boolean): Promise<Inserted> {
  return insertSlices(
    db,
    jsonSlices(rows),
    (json) => sql`insert into logs (project_id, level, message, context, source, "timestamp", received_at)
        select project.id, level, message, context, source, "timestamp", received_at
          from json_to_recordset(${json}::json)
            as x(level text, message text, context jsonb, source text, "timestamp" timestamptz, received_at timestamptz)
         cross join ${lockedProject(projectId)}`,
    withIds,
  );
}

/**
 * Inserts the entries of a batch request straight from its JSON text, a slice at a time, when
 * every entry passed validation in its plainest form (BatchText.levels): PostgreSQL reads the
 * text, and the app never serialises the entries again (for a thousand entries, 7 ms of
 * JSON.stringify and a second copy of the batch in memory). Equivalent to insertLogs of the
 * validated entries: a timestamp is cut to the millisecond, as a Date holds it, and a missing one
 * is the time received. Unknown fields are ignored, as validation strips them. All rows or none
 * are stored; nothing when the project is gone.
 */
export function insertLogsJson(db: DbTx, projectId: number, batch: BatchText, receivedAt: Date): Promise<Inserted> {
  const received = timestamptz(receivedAt);
  const texts = (function* () {
    for (const slice of batch.slices()) yield slice.text;
  })();
  return insertSlices(
    db,
    texts,
    (json) => sql`insert into logs (project_id, level, message, context, source, "timestamp", received_at)
        select project.id, level, message, context, source,
               coalesce(date_trunc('milliseconds', "timestamp"), ${received}), ${received}
          from json_to_recordset(${json}::json)
            as x(level text, message text, context jsonb, source text, "timestamp" timestamptz)
         cross join ${lockedProject(projectId)}`,
    false,
  );
}

function where(projectId: number, filters: LogFilters): SQL | undefined {
  return and(
    eq(logs.projectId, projectId),
    filters.level ? eq(logs.level, filters.level) : undefined,
    filters.from ? gte(logs.timestamp, filters.from) : undefined,
    filters.to ? lte(logs.timestamp, filters.to) : undefined,
    filters.search ? ilike(logs.message, likePattern(filters.search)) : undefined,
    filters.patternId ? eq(logs.patternId, filters.patternId) : undefined,
    ...(filters.after
      ? [
          sql`(${logs.timestamp}, ${logs.id}) < (${cursorTime(filters.after)}, ${filters.after.id}::bigint)`,
          // Implied by the row comparison, but only this form lets PostgreSQL skip the partitions
          // of the days after the cursor.
          sql`${logs.timestamp} <= ${cursorTime(filters.after)}`,
        ]
      : []),
  );
}

/** The search text is matched literally: %, _ and \ lose their LIKE meaning. */
function likePattern(search: string): string {
  return `%${escapeLike(search)}%`;
}

function cursorTime(after: LogCursor): SQL {
  return sql`${after.timestamp}::timestamptz`;
}

/**
 * The row as listed, with its timestamp to the microsecond as text for the cursor: a Date keeps
 * milliseconds, and a cursor cut to the millisecond would skip the logs written (by SQL, by an
 * import) in the rest of that millisecond.
 */
const listed = {
  ...getTableColumns(logs),
  cursorTime: sql<string>`to_char(${logs.timestamp} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`.as('cursor_time'),
};

export type ListedLog = Log & { cursorTime: string };

/** Days of logs the daily rollups cover for certain: they are kept 62 days (maintenance), with a margin. */
const ROLLUP_DAYS = ROLLUP_KEEP_DAYS.day - 2;

/**
 * The exact size of a list filtered by level at most, summed from the daily rollups, which the
 * log triggers keep exact: a read of a few dozen rows where counting the logs plans over every
 * partition. Undefined when the rollups may not cover the project's logs (a retention longer than
 * they are kept), or the list has other filters.
 */
async function rollupCount(db: DbTx, projectId: number, filters: LogFilters): Promise<number | undefined> {
  if (filters.from || filters.to || filters.search || filters.patternId) return undefined;
  const [row] = await queryRows<{ n: number | string | null }>(
    db,
    sql`select case when p.retention_days <= ${ROLLUP_DAYS} then
                 (select coalesce(sum(c.count), 0) from ${logLevelCounts} c
                   where c.project_id = p.id and c.grain = 'day' ${filters.level ? sql`and c.level = ${filters.level}` : sql``})
               end as n
          from ${projects} p where p.id = ${projectId}`,
  );
  return row?.n === null || row?.n === undefined ? undefined : Number(row.n);
}

export async function listLogs(db: DbTx, projectId: number, filters: LogFilters, limit: number, offset: number) {
  // Counts ignore the cursor: they are the size of the whole filtered list.
  const counted = where(projectId, { ...filters, after: undefined });
  if (!filters.search) {
    const [rows, total] = await Promise.all([
      newestPage(db, where(projectId, filters), limit, offset),
      rollupCount(db, projectId, filters).then(async (exact) =>
        exact === undefined ? countLogs(db, counted, await estimate(db, counted)) : { total: exact, estimated: false },
      ),
    ]);
    return { rows, ...total };
  }
  return searchLogs(db, projectId, { ...filters, search: filters.search }, limit, offset);
}

function newestPage(db: DbTx, condition: SQL | undefined, limit: number, offset: number): Promise<ListedLog[]> {
  return db.select(listed).from(logs).where(condition).orderBy(...newestFirst).limit(limit).offset(offset);
}

/**
 * A search, by the cheaper of two plans for the share of logs that match:
 * - a common text: read the newest logs in index order (only the other filters narrow them) and
 *   keep the matches; a page fills within a few hundred rows, whatever the size of the project;
 * - a rare text: the trigram index finds every match, the newest are kept, and their number is
 *   the exact count, for free.
 * A first or cursor page takes the share from the planner's estimate over the day of logs before
 * it (a few partitions to plan, where an estimate over every daily partition cost as much as the
 * search), reads the newest logs no further than the page needs, and sizes the total by where it
 * stopped. A page by offset is sized by the planner's estimate over the whole list. Either can
 * be far off (a text common in other projects and absent from this one, common long ago and rare
 * lately), so a read is bounded, and a text that proves rare goes to the index after all.
 */
async function searchLogs(db: DbTx, projectId: number, filters: LogFilters & { search: string }, limit: number, offset: number) {
  const others = { ...filters, search: undefined };
  const counted = where(projectId, { ...filters, after: undefined });
  const newest = where(projectId, others);
  let planned: Promise<Estimate> | undefined;
  const plan = () => (planned ??= estimate(db, counted));
  // The size of the list without the search: exact from the rollups where they can tell.
  const unsearched = rollupCount(db, projectId, others).then(async (exact) =>
    exact === undefined
      ? { ...(await estimate(db, where(projectId, { ...others, after: undefined }))), exact: false }
      : { rows: exact, cost: 0, exact: true },
  );
  // Awaited only on the paths that need it; a failure must not go unhandled on the others.
  unsearched.catch(() => undefined);
  const rowsFor = (s: number) => Math.max(SEARCH_WALK_ROWS.min, Math.ceil((2 * (offset + limit)) / s));

  /**
   * A full page from a read of the newest logs, where `share` of them matched; `gate` is the
   * estimate that decides whether the list is counted exactly (countLogs).
   */
  async function answer(rows: ListedLog[], share: number, gate: () => Promise<Estimate> = plan) {
    const implied = Math.round(share * (await unsearched).rows);
    const total =
      offset === 0 && implied >= 2 * EXACT_COUNT_LIMIT
        ? // Far beyond what is counted exactly: the share seen is the estimate.
          { total: implied, estimated: true }
        : await countLogs(db, counted, await gate(), true);
    // An estimate below what the page itself shows would be a last page before the last.
    return { rows, ...total, total: Math.max(total.total, offset + limit) };
  }

  /**
   * Reads the newest logs for a page when `share` says it fills within SEARCH_WALK_ROWS.max of
   * them, and once more, longer, sized by the share seen when the first read comes short but
   * found matches. Answers the page, or undefined for the index to find it.
   */
  async function readNewest(share: number, read: (walkRows: number) => Promise<NewestRead>, gate?: () => Promise<Estimate>) {
    if (share < SEARCH_WALK_MIN_SHARE) return undefined;
    const walkRows = Math.min(SEARCH_WALK_ROWS.max, rowsFor(share));
    const first = await read(walkRows);
    if (first.rows.length === limit) return answer(first.rows, first.share, gate);
    if (first.share > 0 && walkRows < SEARCH_WALK_ROWS.max && rowsFor(first.share) <= SEARCH_WALK_ROWS.max) {
      const longer = await read(rowsFor(first.share));
      if (longer.rows.length === limit) return answer(longer.rows, longer.share, gate);
    }
    return undefined;
  }

  if (offset === 0) {
    // The share of matches among the logs of the day before the page, as the planner sees it:
    // that day's partitions only, so that it plans in a fraction of a millisecond.
    const day = recentDay(filters);
    const [all, recent, recentMatching] = await Promise.all([
      unsearched,
      estimate(db, where(projectId, { ...others, ...day, after: undefined })),
      estimate(db, where(projectId, { ...filters, ...day, after: undefined })),
    ]);
    if (all.exact && !filters.after && all.rows <= SEARCH_WALK_ROWS.min) {
      // A list this short is read whole: its matches are the page, and their number the total.
      const whole = await walkedPage(db, newest, filters.search, SEARCH_WALK_ROWS.min, limit, 0);
      return { rows: whole.rows, total: whole.matched, estimated: false };
    }
    // Whether to count exactly, judged without planning over every partition: the day's estimate
    // scaled to the whole list (a bounded list plans over its own few partitions anyway).
    const gate = async (): Promise<Estimate> => {
      if (filters.from || filters.to) return plan();
      const scale = all.rows / Math.max(1, recent.rows);
      return { rows: Math.round(recentMatching.rows * scale), cost: recentMatching.cost * scale };
    };
    // The newest logs, read no further than the page needs.
    const found = await readNewest(
      recentMatching.rows / Math.max(1, recent.rows),
      (walkRows) => streamedPage(db, newest, filters.search, walkRows, limit),
      gate,
    );
    if (found) return found;
  } else {
    const [p, all] = await Promise.all([plan(), unsearched]);
    const found = await readNewest(p.rows / Math.max(1, all.rows), (walkRows) =>
      walkedPage(db, newest, filters.search, walkRows, limit, offset),
    );
    if (found) return found;
  }
  const { rows, matched } = await indexedPage(db, projectId, filters, limit, offset);
  if (matched !== undefined) return { rows, total: matched, estimated: false };
  // The page is empty, so it carries no count: the cursor or the offset is past the last match.
  return { rows, ...(await countLogs(db, counted, await plan(), true)) };
}

/**
 * The day of logs just before a first or cursor page: before the cursor or `to`, within `from`,
 * else the last 24 hours.
 */
function recentDay(filters: LogFilters): { from: Date; to?: Date } {
  const bounds = [filters.to?.getTime(), filters.after ? Date.parse(filters.after.timestamp) : undefined].filter(
    (t): t is number => t !== undefined,
  );
  const end = bounds.length > 0 ? Math.min(...bounds) : undefined;
  const start = Math.max((end ?? Date.now()) - 86_400_000, filters.from?.getTime() ?? -Infinity);
  return { from: new Date(start), ...(end === undefined ? {} : { to: new Date(end) }) };
}

/** A page read from the newest logs, and the share of them that matched. */
interface NewestRead {
  rows: ListedLog[];
  share: number;
}

/**
 * The first `limit` matches among the `walkRows` newest logs that pass the other filters, read in
 * index order and no further than the last of them (row_number streams, the scan stops): the page,
 * and the share of matches among the logs read.
 */
async function streamedPage(db: DbTx, others: SQL | undefined, search: string, walkRows: number, limit: number): Promise<NewestRead> {
  const read = sql<number>`row_number() over (order by ${logs.timestamp} desc nulls last, ${logs.id} desc nulls last)`.as('read');
  const newest = db.select({ ...listed, read }).from(logs).where(others).orderBy(...newestFirst).limit(walkRows).as('newest');
  const found = await db
    .select()
    .from(newest)
    .where(ilike(newest.message, likePattern(search)))
    .orderBy(sql`${newest.timestamp} desc nulls last`, sql`${newest.id} desc nulls last`)
    .limit(limit);
  const rows = found.map(({ read: _, ...row }) => row as ListedLog);
  // A full page: its matches over the logs read to fill it; else every match among the logs read.
  const share = rows.length === limit ? limit / Number(found.at(-1)?.read) : rows.length / walkRows;
  return { rows, share };
}

/**
 * The matches among the `walkRows` newest logs that pass the other filters: the page asked for,
 * how many there were in all (0 when the page is empty: the offset may have passed them), and
 * their share.
 */
async function walkedPage(db: DbTx, others: SQL | undefined, search: string, walkRows: number, limit: number, offset: number) {
  const newest = db.select(listed).from(logs).where(others).orderBy(...newestFirst).limit(walkRows).as('newest');
  const found = await db
    .select({ ...newest._.selectedFields, matched: sql<number>`count(*) over ()`.as('matched') })
    .from(newest)
    .where(ilike(newest.message, likePattern(search)))
    .orderBy(sql`${newest.timestamp} desc nulls last`, sql`${newest.id} desc nulls last`)
    .limit(limit)
    .offset(offset);
  const matched = Number(found[0]?.matched ?? 0);
  return { rows: found.map(({ matched: _, ...row }) => row as ListedLog), matched, share: matched / walkRows };
}

/**
 * Every match through the trigram index, counted (the window runs before the cursor and the
 * offset, so `matched` is the size of the whole filtered list), and the page of them asked for.
 * Index scans (which would read the project in order) and sequential scans are turned off for
 * the statement, leaving bitmap scans of the trigram index, and-ed with the b-trees. That plan
 * does not depend on the text searched, so it is the generic one, planned once per connection
 * (the statement is prepared): planning it over every daily partition cost as much as running it.
 * Time bounds stay parameters, and the partitions outside them are pruned when it runs. Without
 * three letters or digits in a row the trigram index has nothing to look up, and forcing it
 * would read all of it: the planner chooses then.
 */
async function indexedPage(db: DbTx, projectId: number, filters: LogFilters & { search: string }, limit: number, offset: number) {
  const all = db
    .select({ ...listed, matched: sql<number>`count(*) over ()`.as('matched') })
    .from(logs)
    .where(where(projectId, { ...filters, after: undefined }))
    .as('matching');
  const after = filters.after;
  const page = (tx: DbTx) =>
    tx
      .select()
      .from(all)
      .where(after ? sql`(${all.timestamp}, ${all.id}) < (${cursorTime(after)}, ${after.id}::bigint)` : undefined)
      .orderBy(sql`${all.timestamp} desc nulls last`, sql`${all.id} desc nulls last`)
      .limit(limit)
      .offset(offset);
  const found = /[\p{L}\p{N}]{3}/u.test(filters.search)
    ? await withTransaction(db, async (tx) => {
        await tx.execute(
          sql`select set_config('enable_indexscan', 'off', true), set_config('enable_seqscan', 'off', true),
                     set_config('plan_cache_mode', 'force_generic_plan', true)`,
        );
        return page(tx);
      })
    : await page(db);
  const first = found[0];
  return {
    rows: found.map(({ matched: _, ...row }) => row),
    matched: first ? Number(first.matched) : offset === 0 && !after ? 0 : undefined,
  };
}

/**
 * The size of the filtered list: exact when that is cheap, else the planner's estimate, marked
 * as such, so that a million-row project answers as fast as a small one.
 * - Far beyond EXACT_COUNT_LIMIT, the estimate is the answer.
 * - Otherwise a count that stops at EXACT_COUNT_LIMIT + 1. Without a search it reads only an
 *   index, so its cost is bounded; a search must read each candidate row, so it is counted only
 *   when the planner expects that to be cheap (EXACT_COUNT_MAX_COST).
 */
async function countLogs(db: DbTx, condition: SQL | undefined, plan: Estimate, search = false) {
  if (plan.rows > 10 * EXACT_COUNT_LIMIT || (search && plan.cost > EXACT_COUNT_MAX_COST)) {
    return { total: plan.rows, estimated: true };
  }
  const capped = db.select({ one: sql`1` }).from(logs).where(condition).limit(EXACT_COUNT_LIMIT + 1);
  const [row] = await queryRows<{ n: number }>(db, sql`select count(*)::int as n from (${capped}) as capped`);
  const exact = Number(row?.n ?? 0);
  if (exact <= EXACT_COUNT_LIMIT) return { total: exact, estimated: false };
  return { total: Math.max(plan.rows, EXACT_COUNT_LIMIT + 1), estimated: true };
}

interface Estimate {
  /** Rows the planner expects to match. */
  rows: number;
  /** Its cost of reading them all, in its units. */
  cost: number;
}

async function estimate(db: DbTx, condition: SQL | undefined): Promise<Estimate> {
  type Plan = { Plan: { 'Plan Rows': number; 'Total Cost': number } }[];
  const result = await queryRows<{ 'QUERY PLAN': Plan | string }>(
    db,
    sql`explain (format json) ${db.select({ one: sql`1` }).from(logs).where(condition)}`,
  );
  const raw = result[0]?.['QUERY PLAN'];
  const plan = (typeof raw === 'string' ? (JSON.parse(raw) as Plan) : raw)?.[0]?.Plan;
  return { rows: Math.round(plan?.['Plan Rows'] ?? 0), cost: plan?.['Total Cost'] ?? 0 };
}

/** The columns of a log, read from the row that log_for_member answers (aliased `l`). */
const fromFunction = Object.fromEntries(
  Object.entries(getTableColumns(logs)).map(([key, column]) => [key, sql.raw(`l."${column.name}"`).mapWith(column)]),
) as { [K in keyof Log]: SQL.Aliased<Log[K]> | SQL<Log[K]> };

/**
 * A log the user may read: one of a project they are a member of. An id says nothing of the day
 * a log belongs to, so the lookup probes every daily partition; log_for_member (migration 0007)
 * keeps its plan for the session, where planning it afresh over every partition cost more than
 * running it.
 */
export async function findLogForMember(db: DbTx, logId: number, userId: number): Promise<Log | undefined> {
  const [row] = await db
    .select(fromFunction)
    .from(sql`log_for_member(${logId}::bigint, ${userId}::int) as l`)
    .limit(1);
  return row as Log | undefined;
}
