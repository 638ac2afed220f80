import type { Actor } from '@repo/auth';
import { AppError, pageMeta, pageOffset } from '@repo/http';
import type { DbTx } from '../../db/index.js';
import type { NewLog } from '../../db/schema/index.js';
import type { ProjectAccess } from '../projects/projects.service.js';
import * as repo from './logs.repository.js';
import type { ListLogsQuery, LogEntryBody } from './logs.schemas.js';

function toRow(projectId: number, entry: LogEntryBody, receivedAt: Date): NewLog {
  return {
    projectId,
    level: entry.level,
    message: entry.message,
    context: entry.context ?? null,
    source: entry.source ?? null,
    timestamp: entry.timestamp ?? receivedAt,
    receivedAt,
  };
}

export function createLogsService(deps: { db: DbTx; access: ProjectAccess }) {
  const { db, access } = deps;
  return {
    async create(actor: Actor, projectId: number, entry: LogEntryBody) {
      await access.assertMember(actor, projectId);
      const [log] = await repo.insertLogs(db, [toRow(projectId, entry, new Date())]);
      if (!log) throw new Error('insert returned no log');
      return log;
    },

    async createBatch(actor: Actor, projectId: number, entries: LogEntryBody[]) {
      await access.assertMember(actor, projectId);
      const receivedAt = new Date();
      await repo.insertLogs(
        db,
        entries.map((e) => toRow(projectId, e, receivedAt)),
      );
      return { accepted: entries.length };
    },

    async list(actor: Actor, projectId: number, query: ListLogsQuery) {
      await access.assertMember(actor, projectId);
      const { page, per_page } = query;
      const { rows, total } = await repo.listLogs(
        db,
        projectId,
        { level: query.level, from: query.from_date, to: query.to_date, search: query.search },
        per_page,
        pageOffset(page, per_page),
      );
      return { rows, meta: pageMeta(page, per_page, total) };
    },

    async get(actor: Actor, logId: number) {
      const log = await repo.findLogForMember(db, logId, actor.userId);
      if (!log) throw AppError.notFound('Log');
      return log;
    },
  };
}

export type LogsService = ReturnType<typeof createLogsService>;
