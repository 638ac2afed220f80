import { Readable, pipeline, type Transform } from 'node:stream';
import { stringify } from 'csv-stringify';
import type { DbTx } from '../../db/index.js';
import type { Actor } from '../../lib/context.js';
import { localPeriod, type Period } from '../../lib/periods.js';
import { todayIn, type Clock } from '../../lib/time.js';
import * as repo from './admin-stats.repository.js';
import type { ExportFormat, ExportQuery, StatsQuery } from './admin-stats.schemas.js';

/** Rows read per query of an export: enough to amortise the round trip, few enough to keep memory flat. */
export const EXPORT_BATCH = 2000;

/**
 * A text cell a spreadsheet would run as a formula (`=`, `+`, `-`, `@`, and the tab and carriage
 * return some spreadsheets skip first) gets a leading quote (OWASP's CSV injection advice).
 */
export function neutraliseCell(value: string): string {
  return /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
}

function csvCell(value: repo.ExportRow[string]): string | number {
  if (value === null) return '';
  if (value instanceof Date) return value.toISOString();
  return typeof value === 'string' ? neutraliseCell(value) : value;
}

function jsonValue(value: repo.ExportRow[string]) {
  return value instanceof Date ? value.toISOString() : value;
}

/**
 * The export's body: rows pulled from `rows` only as fast as the reader takes them (Readable.from
 * asks the generator for the next row when the consumer drains). An error of the source after the
 * first byte destroys the stream, which ends the response instead of leaving it hanging.
 */
export function exportStream(format: ExportFormat, headers: readonly string[], rows: AsyncIterable<repo.ExportRow>): Readable {
  if (format === 'jsonl') {
    return Readable.from(
      (async function* lines() {
        for await (const row of rows) {
          const out: Record<string, unknown> = {};
          for (const h of headers) out[h] = jsonValue(row[h] ?? null);
          yield `${JSON.stringify(out)}\n`;
        }
      })(),
      { objectMode: false },
    );
  }
  const source = Readable.from(
    (async function* records() {
      for await (const row of rows) yield headers.map((h) => csvCell(row[h] ?? null));
    })(),
  );
  const csv: Transform = stringify({ header: true, columns: headers as string[] });
  // pipeline destroys both streams when either fails, and passes the error on to the reader.
  return pipeline(source, csv, () => {}) as Transform;
}

/** Dashboards and statistics for administrators, in the platform time zone, and the streamed exports. */
export function createAdminStatsService(deps: { db: DbTx; clock: Pick<Clock, 'zone'>; now?: () => Date }) {
  const { db, clock } = deps;
  const now = deps.now ?? (() => new Date());
  const period = (query: { from?: string; to?: string }): Period => localPeriod(clock.zone, query, now());
  const frame = (p: Period, query: StatsQuery) => ({ from: p.from, to: p.to, group_by: query.group_by, timezone: p.zone });

  return {
    async dashboard(_actor: Actor) {
      const today = todayIn(clock.zone, now());
      const p = localPeriod(clock.zone, { from: today, to: today });
      const row = await repo.dashboard(db, p);
      return { row, today, timezone: clock.zone };
    },

    async overview(_actor: Actor, query: StatsQuery) {
      const p = period(query);
      return { ...frame(p, query), totals: await repo.overview(db, p) };
    },

    async users(_actor: Actor, query: StatsQuery) {
      const p = period(query);
      return { ...frame(p, query), series: await repo.usersSeries(db, p, query.group_by) };
    },

    async revenue(_actor: Actor, query: StatsQuery) {
      const p = period(query);
      const series = await repo.revenueSeries(db, p, query.group_by);
      return { ...frame(p, query), series: series.map((b) => ({ ...b, net_cents: b.volume_cents - b.refunds_cents })) };
    },

    async services(_actor: Actor, query: StatsQuery) {
      const p = period(query);
      return { ...frame(p, query), rows: await repo.servicesRows(db, p) };
    },

    /**
     * A dataset's rows created in the period, as a stream. The query is checked and the first batch
     * read before anything is sent, so bad input or an unreachable database still answer in the
     * envelope; later batches are read as the client consumes the body.
     */
    async export(_actor: Actor, query: ExportQuery) {
      const p = period(query);
      const { dataset } = query;
      const first = await repo.exportBatch(db, dataset, p, 0, EXPORT_BATCH);
      async function* rows() {
        let batch = first;
        for (;;) {
          yield* batch;
          if (batch.length < EXPORT_BATCH) return;
          batch = await repo.exportBatch(db, dataset, p, Number(batch.at(-1)!.id), EXPORT_BATCH);
        }
      }
      return {
        filename: `${dataset}-${p.from}-${p.to}.${query.format === 'csv' ? 'csv' : 'jsonl'}`,
        contentType: query.format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson; charset=utf-8',
        stream: exportStream(query.format, repo.exportHeaders[dataset], rows()),
      };
    },
  };
}

export type AdminStatsService = ReturnType<typeof createAdminStatsService>;
