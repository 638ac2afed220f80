import type { Caller } from '@repo/auth';
import { iso } from '@repo/schemas';
import type { DbTx } from '../../db/index.js';
import { LOG_LEVELS, type LogLevel } from '../../db/schema/index.js';
import type { ProjectAccess } from '../projects/index.js';
import * as repo from './stats.repository.js';
import { bucketCount, customPeriod, presetPeriod, type Period } from './stats.periods.js';
import type { StatsQuery } from './stats.schemas.js';

type LevelCounts = Record<LogLevel, number>;

const zeroCounts = (): LevelCounts => ({ error: 0, warning: 0, info: 0, debug: 0 });
const round = (n: number, digits = 4) => Math.round(n * 10 ** digits) / 10 ** digits;
const sum = (c: LevelCounts) => LOG_LEVELS.reduce((acc, l) => acc + c[l], 0);
const rate = (c: LevelCounts) => {
  const total = sum(c);
  return total === 0 ? 0 : round(c.error / total);
};
const pctChange = (current: number, previous: number) =>
  previous === 0 ? null : round(((current - previous) / previous) * 100, 2);

export function createStatsService(deps: { db: DbTx; access: ProjectAccess; now?: () => Date }) {
  const now = deps.now ?? (() => new Date());
  return {
    /** A named range, or the custom one `from_date` and `to_date` give, which replaces it. */
    forProject(caller: Caller, projectId: number, query: StatsQuery) {
      // Read while membership is checked: a round trip fewer.
      return deps.access.whileMember(caller, projectId, () => statistics(projectId, query));
    },
  };

  /** The statistics of a project (StatsService.forProject): reads only, run while membership is checked. */
  async function statistics(projectId: number, query: StatsQuery) {
    const period: Period =
      query.from_date && query.to_date ? customPeriod(query.from_date, query.to_date) : presetPeriod(query.time_range, now());
    const { from, to, bucketMs, granularity } = period;
    // The previous period is as long, just before.
    const previousFrom = new Date(2 * from.getTime() - to.getTime());
    const slots = bucketCount(period);

    const [levels, buckets, sources] = await Promise.all([
      repo.countByLevel(deps.db, projectId, previousFrom, from, to),
      repo.seriesByLevel(deps.db, granularity, projectId, from, to, bucketMs, slots),
      repo.topSources(deps.db, projectId, from, to, 10),
    ]);

    const current = zeroCounts();
    const previous = zeroCounts();
    for (const row of levels) {
      current[row.level] = Number(row.current);
      previous[row.level] = Number(row.previous);
    }

    // Every bucket of the range appears, empty ones with zeros, so charts need no gap filling.
    const series = Array.from({ length: slots }, (_, i) => ({
      start: iso(new Date(from.getTime() + i * bucketMs)),
      total: 0,
      ...zeroCounts(),
    }));
    for (const row of buckets) {
      const bucket = series[Number(row.slot)];
      if (!bucket) continue;
      bucket[row.level] += Number(row.n);
      bucket.total += Number(row.n);
    }

    const total = sum(current);
    const previousTotal = sum(previous);
    return {
      time_range: period.label,
      from: iso(from),
      to: iso(to),
      bucket_seconds: bucketMs / 1000,
      total,
      by_level: current,
      error_rate: rate(current),
      series,
      top_sources: sources.map((s) => ({ source: s.source, count: Number(s.count) })),
      previous_period: {
        from: iso(previousFrom),
        to: iso(from),
        total: previousTotal,
        by_level: previous,
        error_rate: rate(previous),
      },
      change: {
        total_pct: pctChange(total, previousTotal),
        errors_pct: pctChange(current.error, previous.error),
        error_rate_delta: round(rate(current) - rate(previous)),
      },
    };
  }
}

export type StatsService = ReturnType<typeof createStatsService>;
