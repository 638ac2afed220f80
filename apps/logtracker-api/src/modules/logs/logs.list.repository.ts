import type { SQL } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { logs, newestFirst } from '../../db/schema/index.js';
import { countLogs, estimate, rollupCount } from './logs.counts.repository.js';
import { listed, where, type ListedLog, type LogFilters } from './logs.filters.repository.js';
import { searchLogs } from './logs.search.repository.js';

/**
 * A page of a project's logs, newest first, and the size of the whole filtered list (exact, or
 * estimated and marked as such). A search goes to its own strategy (logs.search.repository.ts).
 */
export async function listLogs(dbs: { db: DbTx; plannedOnce: DbTx }, projectId: number, filters: LogFilters, limit: number, offset: number) {
  const { db } = dbs;
  // Counts ignore the cursor: they are the size of the whole filtered list.
  const counted = where(projectId, { ...filters, after: undefined });
  if (!filters.search) {
    const [rows, total] = await Promise.all([
      // Without time bounds the plan is the same for any project and level: kept, not made anew.
      newestPage(filters.from || filters.to ? db : dbs.plannedOnce, where(projectId, filters), limit, offset),
      rollupCount(dbs.plannedOnce, projectId, filters).then(async (exact) =>
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
