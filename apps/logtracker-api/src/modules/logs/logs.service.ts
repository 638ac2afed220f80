import type { Actor, Caller } from '@repo/auth';
import { AppError, pageMeta, pageOffset } from '@repo/http';
import type { DbTx } from '../../db/index.js';
import type { NewLog } from '../../db/schema/index.js';
import type { IngestPrincipal } from '../ingest-keys/index.js';
import { patternsOfLogs } from '../patterns/index.js';
import type { ProjectAccess } from '../projects/index.js';
import type { IngestedLog, LogEvents } from './log-events.js';
import type { IngestMetrics } from './logs.metrics.js';
import { listLogs } from './logs.list.repository.js';
import * as repo from './logs.repository.js';
import { BatchText } from './batch-text.js';
import type { LogWrites } from './logs.writes.js';
import { encodeCursor, type BatchBody, type ListLogsQuery, type LogEntryBody } from './logs.schemas.js';

/** Who submits logs: a signed-in member, or an ingest key bound to one project. */
export type LogWriter = { kind: 'user'; actor: Actor } | { kind: 'ingest-key'; key: IngestPrincipal };

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

export function createLogsService(deps: {
  db: DbTx;
  /**
   * Connections whose prepared statements keep a plan: for the pages whose plan is the same for any
   * value (a project's newest logs, by level), where planning over every daily partition cost
   * more than reading the page (1.5 ms against 0.25 over 40 partitions).
   */
  plannedOnce: DbTx;
  access: ProjectAccess;
  events: LogEvents;
  ingest: IngestMetrics;
  /** The instance's inserts of logs: a few at once, requests queued meanwhile merged (createLogWrites). */
  writes: LogWrites;
}) {
  const { db, plannedOnce, access, events, ingest, writes } = deps;

  async function authorizeWrite(writer: LogWriter, projectId: number) {
    if (writer.kind === 'user') {
      await access.assertMember(writer.actor, projectId);
    } else if (writer.key.projectId !== projectId) {
      // A key names one project; any other is as good as absent.
      throw AppError.notFound('Project');
    }
  }

  /** Stores rows in one statement, then announces them (live tail, alerts) without waiting. */
  async function store(projectId: number, rows: NewLog[]) {
    return announce(projectId, rows, await writes.storeRows(projectId, rows, events.wantsLogs(projectId)));
  }

  /**
   * The project's own listeners (live tail) get the logs whole, ids included, when there are
   * any; everyone else only needs their levels.
   */
  function announce(projectId: number, rows: NewLog[], inserted: repo.Inserted): IngestedLog[] | undefined {
    // Nothing stored: the project was deleted since the writer was authorised.
    if (inserted.count !== rows.length) throw AppError.notFound('Project');
    const { ids } = inserted;
    if (!ids) {
      events.publishLevels(projectId, new Set(rows.map((row) => row.level)), rows.length);
      return undefined;
    }
    const stored = rows.map((row, i) => ({
      id: ids[i] as number,
      projectId,
      level: row.level,
      message: row.message,
      context: row.context ?? null,
      source: row.source ?? null,
      timestamp: row.timestamp,
      receivedAt: row.receivedAt as Date,
    }));
    events.publish(projectId, stored);
    return stored;
  }

  return {
    async create(writer: LogWriter, projectId: number, entry: LogEntryBody) {
      await authorizeWrite(writer, projectId);
      // The one log is answered with its id: it is always read back.
      const row = toRow(projectId, entry, new Date());
      const [log] = announce(projectId, [row], await writes.storeRows(projectId, [row], true)) ?? [];
      if (!log) throw new Error('insert returned no log');
      ingest.stored('single', 1);
      return { ...log, patternId: null };
    },

    /**
     * A batch cut and validated in its plainest form (BatchText) is stored from its own text a
     * slice at a time; its entries become objects only for a live tail, which shows them.
     */
    async createBatch(writer: LogWriter, projectId: number, body: BatchBody | BatchText) {
      await authorizeWrite(writer, projectId);
      const receivedAt = new Date();
      if (body instanceof BatchText && body.levels && !events.wantsLogs(projectId)) {
        const inserted = await writes.storeBatch(projectId, body, receivedAt);
        if (inserted.count !== body.count) throw AppError.notFound('Project');
        events.publishLevels(projectId, body.levels, body.count);
        ingest.stored('batch', body.count);
        return { accepted: body.count };
      }
      const entries = body instanceof BatchText ? body.entries() : body.logs;
      await store(projectId, entries.map((e) => toRow(projectId, e, receivedAt)));
      ingest.stored('batch', entries.length);
      return { accepted: entries.length };
    },

    /** Stores rows already mapped (OTLP), for a writer already authorised for the project. */
    async storeMapped(writer: LogWriter, projectId: number, rows: NewLog[]) {
      await authorizeWrite(writer, projectId);
      if (rows.length === 0) return 0;
      await store(projectId, rows);
      ingest.stored('otlp', rows.length);
      return rows.length;
    },

    list(caller: Caller, projectId: number, query: ListLogsQuery) {
      return access.whileMember(caller, projectId, () => listPage(projectId, query));
    },

    async get(caller: Caller, logId: number) {
      const log = await repo.findLogForMember(db, logId, caller.userId);
      if (!log) throw AppError.notFound('Log');
      return log;
    },
  };

  /** A page of a project's logs and its meta (LogsService.list): reads only, run while membership is checked. */
  async function listPage(projectId: number, query: ListLogsQuery) {
    const { page, per_page } = query;
    const { rows, total, estimated } = await listLogs(
      { db, plannedOnce },
      projectId,
      {
        level: query.level,
        source: query.source,
        from: query.from_date,
        to: query.to_date,
        search: query.search,
        patternId: query.pattern_id,
        after: query.cursor,
      },
      per_page,
      query.cursor ? 0 : pageOffset(page, per_page),
    );
    const last = rows.at(-1);
    const tags = await patternsOfLogs(db, projectId, rows);
    return {
      rows: rows.map((r) => ({ ...r, patternId: tags.get(r.id) ?? null })),
      meta: {
        ...pageMeta(page, per_page, total),
        total_is_estimate: estimated,
        next_cursor: rows.length === per_page && last ? encodeCursor({ timestamp: last.cursorTime, id: last.id }) : null,
      },
    };
  }
}

export type LogsService = ReturnType<typeof createLogsService>;
