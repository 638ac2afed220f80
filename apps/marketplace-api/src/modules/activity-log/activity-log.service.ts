import { pageMeta, pageOffset } from '@repo/http';
import type { DbTx } from '../../db/index.js';
import { listActivity, type ActivityFilters } from './activity-log.repository.js';

/** Reading the audit trail; entries are written through the one recorder (`createActivityRecorder`). */
export function createActivityLogService(deps: { db: DbTx }) {
  const { db } = deps;
  return {
    async list(filters: ActivityFilters, page: number, perPage: number) {
      const { rows, total } = await listActivity(db, filters, perPage, pageOffset(page, perPage));
      return { rows, meta: pageMeta(page, perPage, total) };
    },

    /** The newest entries about one subject (an account's history on its admin page). */
    async latestAbout(subjectType: string, subjectId: number, limit: number) {
      const { rows } = await listActivity(db, { subjectType, subjectId }, limit, 0);
      return rows;
    },
  };
}

export type ActivityLogService = ReturnType<typeof createActivityLogService>;
