import { Readable, Transform, pipeline } from 'node:stream';
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
  const first = value.charCodeAt(0);
  // = + - @ \t \r
  return first === 61 || first === 43 || first === 45 || first === 64 || first === 9 || first === 13 ? `'${value}` : value;
}

function csvCell(value: repo.ExportRow[string] | undefined): string | number {
  if (value === null || value === undefined) return '';
  return typeof value === 'string' ? neutraliseCell(value) : value;
}

/** How much text goes to the socket at once: csv-stringify emits a chunk per record. */
const WRITE_BYTES = 64 * 1024;

/** Joins small chunks into writes of about WRITE_BYTES (one socket write per record costs more than the record). */
function coalesce(): Transform {
  let pending: Buffer[] = [];
  let size = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      pending.push(chunk);
      size += chunk.length;
      if (size >= WRITE_BYTES) {
        this.push(Buffer.concat(pending, size));
        pending = [];
        size = 0;
      }
      done();
    },
    flush(done) {
      if (size > 0) this.push(Buffer.concat(pending, size));
      done();
    },
  });
}

/**
 * The export's body, from batches of rows pulled only as fast as the reader takes them: Readable.from
 * asks the generator for the next batch when the stream below has room, so at most a batch or two is
 * held at once. CSV goes through csv-stringify's Transform (one record per write); JSON lines are
 * written a batch at a time. An error of the source after the first byte destroys the stream, which
 * ends the response instead of leaving it hanging.
 */
export function exportStream(format: ExportFormat, headers: readonly string[], batches: AsyncIterable<repo.ExportRow[]>): Readable {
  if (format === 'jsonl') {
    return Readable.from(
      (async function* lines() {
        for await (const batch of batches) {
          let text = '';
          for (const row of batch) {
            const out: Record<string, unknown> = {};
            for (const h of headers) out[h] = row[h] ?? null;
            text += `${JSON.stringify(out)}\n`;
          }
          if (text) yield text;
        }
      })(),
      { objectMode: false },
    );
  }
  const source = Readable.from(
    (async function* records() {
      for await (const batch of batches) yield batch.map((row) => headers.map((h) => csvCell(row[h])));
    })(),
    // One batch ahead at most (the object-mode default would read 16 batches ahead).
    { highWaterMark: 1 },
  );
  // One batch in, its records out one by one: the next batch is asked for once the CSV side has
  // taken these (a Transform holds its callback while its output is over the high-water mark).
  const records = new Transform({
    objectMode: true,
    writableHighWaterMark: 1,
    transform(batch: (string | number)[][], _encoding, done) {
      for (const record of batch) this.push(record);
      done();
    },
  });
  const csv = stringify({ header: true, columns: headers as string[] });
  // pipeline destroys every stream when one fails, and passes the error on to the reader.
  return pipeline(source, records, csv, coalesce(), () => {}) as Transform;
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
      let first: repo.ExportRow[] | null = await repo.exportBatch(db, dataset, p, 0, EXPORT_BATCH);
      async function* batches() {
        let batch = first!;
        // Held from here by `batch` only, so it can be collected once sent.
        first = null;
        for (;;) {
          yield batch;
          if (batch.length < EXPORT_BATCH) return;
          batch = await repo.exportBatch(db, dataset, p, Number(batch.at(-1)!.id), EXPORT_BATCH);
        }
      }
      return {
        filename: `${dataset}-${p.from}-${p.to}.${query.format === 'csv' ? 'csv' : 'jsonl'}`,
        contentType: query.format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson; charset=utf-8',
        stream: exportStream(query.format, repo.exportHeaders[dataset], batches()),
      };
    },
  };
}

export type AdminStatsService = ReturnType<typeof createAdminStatsService>;
