import type { Actor } from '@repo/auth';
import { iso } from '@repo/schemas';
import type { DbTx } from '../../db/index.js';
import { LOG_LEVELS, type LogLevel } from '../../db/schema/index.js';
import type { NarrativeWriter } from '../../integrations/ai/ai.js';
import { patternRecords as patternsRepo } from '../patterns/index.js';
import { statsRecords as statsRepo } from '../stats/index.js';
import type { PatternMiningService } from '../patterns/index.js';
import type { ProjectAccess } from '../projects/index.js';
import { RANGE_SPEC } from '../stats/index.js';
import * as repo from './analysis.repository.js';
import { AnalysisTally } from './analysis.tally.js';
import type { AnalysisResult, AnalyzeBody, FocusArea } from './analysis.schemas.js';

const TOP = 10;
// A bucket is anomalous when it holds at least this many logs and this many times its baseline.
const ANOMALY_MIN_COUNT = 10;
const ANOMALY_FACTOR = 3;

// What a template says about an area: words, not dataset-specific ids.
const FOCUS_PATTERNS: Partial<Record<FocusArea, RegExp>> = {
  performance: /\b(timeout|timed out|slow|latency|took|elapsed|duration|deadlock|retry|retrying|throttl\w*|queue full|backpressure|oom|out of memory|\d+\s?ms)\b/i,
  security: /\b(auth\w*|unauthori[sz]ed|forbidden|denied|permission|password|login|logon|token|credential\w*|ssh|sudo|invalid user|certificate|tls|csrf|injection|brute)\b/i,
};

const round = (n: number, digits = 4) => Math.round(n * 10 ** digits) / 10 ** digits;

interface PatternRow {
  id: number;
  template: string;
  levels: LogLevel[];
  sample: string | null;
}

export function createAnalysisService(deps: {
  db: DbTx;
  access: ProjectAccess;
  mining: PatternMiningService;
  narrative: NarrativeWriter;
  now?: () => Date;
}) {
  const { db } = deps;
  const now = deps.now ?? (() => new Date());

  async function computeFacts(projectId: number, body: AnalyzeBody, from: Date, to: Date, tally: AnalysisTally) {
    const { ms, bucketMs } = RANGE_SPEC[body.time_range];
    const previousFrom = new Date(from.getTime() - ms);
    const levels = body.log_levels ?? [...LOG_LEVELS];
    const buckets = Math.ceil(ms / bucketMs);

    // Totals and sources from the rollups; counts per pattern and bucket from the mining run's tally.
    const counted = tally.patternCounts();
    const [levelRows, sources, firstSeen] = await Promise.all([
      statsRepo.countByLevel(db, projectId, previousFrom, from, to),
      statsRepo.topSources(db, projectId, from, to, 5),
      patternsRepo.patternsFirstSeenSince(db, projectId, from, counted.map((r) => r.pattern_id)),
    ]);
    const topRows = counted.slice(0, 200);
    const newRows = counted.filter((r) => firstSeen.has(r.pattern_id)).slice(0, TOP);

    const byLevel = Object.fromEntries(LOG_LEVELS.map((l) => [l, 0])) as Record<LogLevel, number>;
    const previous = { ...byLevel };
    for (const r of levelRows) {
      byLevel[r.level] = Number(r.current);
      previous[r.level] = Number(r.previous);
    }
    const sumOf = (c: Record<LogLevel, number>, only: readonly LogLevel[] = LOG_LEVELS) => only.reduce((a, l) => a + c[l], 0);
    const rateOf = (c: Record<LogLevel, number>) => (sumOf(c) === 0 ? 0 : round(c.error / sumOf(c)));
    const total = sumOf(byLevel, levels);

    const patternIds = [...new Set([...topRows, ...newRows].map((r) => Number(r.pattern_id)))];
    const anomalies = detectAnomalies(
      tally.patternBuckets(),
      tally.patternBaselines(),
      tally.levelBucketCounts(),
      tally.levelBaselineCounts(),
      from,
      bucketMs,
      buckets,
    );
    for (const a of anomalies) if (a.pattern_id !== null) patternIds.push(a.pattern_id);
    const patternRows = await patternsRepo.patternsByIds(db, projectId, [...new Set(patternIds)]);
    const byId = new Map<number, PatternRow>(patternRows.map((p) => [p.id, p]));

    const share = (r: { pattern_id: number; n: number }) => {
      const p = byId.get(Number(r.pattern_id));
      return {
        pattern_id: Number(r.pattern_id),
        template: p?.template ?? '',
        count: Number(r.n),
        share: total === 0 ? 0 : round(Number(r.n) / total),
        levels: p?.levels ?? [],
        sample: p?.sample ?? null,
      };
    };
    for (const a of anomalies) if (a.pattern_id !== null) a.template = byId.get(a.pattern_id)?.template ?? null;

    const focusAreas = body.focus_areas ?? [];
    const focus: Record<string, number[]> = {};
    for (const area of focusAreas) {
      focus[area] = topRows
        .map((r) => byId.get(Number(r.pattern_id)))
        .filter((p): p is PatternRow => p !== undefined && bearsOn(area, p, anomalies, newRows))
        .map((p) => p.id);
    }

    return {
      time_range: body.time_range,
      from: iso(from),
      to: iso(to),
      log_levels: levels,
      focus_areas: focusAreas,
      total,
      by_level: byLevel,
      error_rate: rateOf(byLevel),
      previous_error_rate: rateOf(previous),
      error_rate_change: round(rateOf(byLevel) - rateOf(previous)),
      top_patterns: topRows.slice(0, TOP).map(share),
      new_patterns: newRows.map(share),
      anomalies,
      top_sources: sources.map((s) => ({ source: s.source, count: Number(s.count) })),
      focus,
    };
  }

  return {
    async analyze(actor: Actor, projectId: number, body: AnalyzeBody) {
      await deps.access.assertMember(actor, projectId);
      const to = now();
      const { ms } = RANGE_SPEC[body.time_range];
      const from = new Date(to.getTime() - ms);
      // Every log of the range gets its pattern, whatever the level filter of the report; so do
      // the logs of the previous period, which are the baseline of the pattern anomalies and
      // tell a new pattern from an old one.
      const previousFrom = new Date(from.getTime() - ms);
      const tally = new AnalysisTally({
        previousFrom,
        from,
        to,
        bucketMs: RANGE_SPEC[body.time_range].bucketMs,
        levels: body.log_levels ?? LOG_LEVELS,
      });
      const mined = await deps.mining.mineRange(projectId, previousFrom, to, tally.observe);
      tally.merge(mined.merged);
      const facts = await computeFacts(projectId, body, from, to, tally);
      const result: AnalysisResult = { ...facts, mined: { logs: mined.mined, patterns: mined.patterns } };
      const summary = summarise(result);
      const narrative = await deps.narrative.write({ ...result, summary });
      return repo.insertAnalysis(db, {
        projectId,
        requestedBy: actor.userId,
        timeRange: body.time_range,
        logLevels: result.log_levels,
        focusAreas: result.focus_areas,
        rangeFrom: from,
        rangeTo: to,
        result,
        summary,
        narrative,
        aiModel: narrative ? deps.narrative.model : null,
      });
    },

    async insights(actor: Actor, projectId: number, limit: number) {
      await deps.access.assertMember(actor, projectId);
      const [latest, patterns] = await Promise.all([
        repo.latestAnalysis(db, projectId),
        patternsRepo.topPatterns(db, projectId, limit),
      ]);
      return { latest, patterns };
    },
  };
}

export type AnalysisService = ReturnType<typeof createAnalysisService>;

function bearsOn(
  area: FocusArea,
  p: PatternRow,
  anomalies: { pattern_id: number | null }[],
  newRows: { pattern_id: number }[],
): boolean {
  switch (area) {
    case 'errors':
      return p.levels.includes('error');
    case 'anomalies':
      return anomalies.some((a) => a.pattern_id === p.id);
    case 'new_patterns':
      return newRows.some((r) => Number(r.pattern_id) === p.id);
    case 'sources':
      return false;
    default: {
      const re = FOCUS_PATTERNS[area];
      return re ? re.test(p.template) || re.test(p.sample ?? '') : false;
    }
  }
}

/**
 * Buckets whose count is far above the same key's mean per bucket over the previous period.
 * A key with no history has a baseline of zero: it is reported when it reaches the minimum count.
 */
function detectAnomalies(
  patternBuckets: { key: string | null; bucket: Date | string; n: number }[],
  patternBaseline: { key: string | null; n: number }[],
  levelBuckets: { key: string | null; bucket: Date | string; n: number }[],
  levelBaseline: { key: string | null; n: number }[],
  from: Date,
  bucketMs: number,
  buckets: number,
) {
  const out: AnalysisResult['anomalies'] = [];
  const scan = (
    kind: 'pattern' | 'level',
    rows: { key: string | null; bucket: Date | string; n: number }[],
    baseline: { key: string | null; n: number }[],
  ) => {
    const mean = new Map(baseline.map((b) => [b.key, Number(b.n) / buckets]));
    for (const r of rows) {
      const count = Number(r.n);
      const base = mean.get(r.key) ?? 0;
      if (count < ANOMALY_MIN_COUNT || count < ANOMALY_FACTOR * base || (base > 0 && count < base + 4 * Math.sqrt(base))) continue;
      const start = new Date(r.bucket);
      if (start.getTime() < from.getTime()) continue;
      out.push({
        kind,
        pattern_id: kind === 'pattern' ? Number(r.key) : null,
        template: null,
        level: kind === 'level' ? (r.key as LogLevel) : null,
        bucket_start: iso(start),
        bucket_seconds: bucketMs / 1000,
        count,
        baseline_per_bucket: round(base, 2),
        ratio: base === 0 ? null : round(count / base, 2),
      });
    }
  };
  scan('level', levelBuckets, levelBaseline);
  scan('pattern', patternBuckets, patternBaseline);
  // Largest departures first; a handful is what a person reads.
  return out
    .sort((a, b) => (b.ratio ?? Number.POSITIVE_INFINITY) - (a.ratio ?? Number.POSITIVE_INFINITY) || b.count - a.count)
    .slice(0, 20);
}

const plural = (n: number, word: string) => `${n.toLocaleString('en')} ${word}${n === 1 ? '' : 's'}`;
const pct = (x: number) => `${round(x * 100, 1)}%`;

/** A plain-language summary built only from the computed facts; focus areas come first. */
export function summarise(r: AnalysisResult): string {
  if (r.total === 0) {
    return `No logs at the selected levels (${r.log_levels.join(', ')}) in the last ${r.time_range}.`;
  }
  const parts: Record<string, string[]> = { overview: [], errors: [], new_patterns: [], anomalies: [], sources: [], performance: [], security: [] };
  parts.overview!.push(
    `${plural(r.total, 'log')} in the last ${r.time_range} (${LOG_LEVELS.filter((l) => r.by_level[l] > 0)
      .map((l) => `${r.by_level[l].toLocaleString('en')} ${l}`)
      .join(', ')}); ${r.mined.logs > 0 ? `${plural(r.mined.logs, 'new log')} grouped into patterns. ` : ''}`.trimEnd(),
  );
  const change = r.error_rate_change;
  parts.errors!.push(
    `Error rate ${pct(r.error_rate)}${
      Math.abs(change) >= 0.005 ? `, ${change > 0 ? 'up' : 'down'} from ${pct(r.previous_error_rate)} in the previous period` : ', steady against the previous period'
    }.`,
  );
  const top = r.top_patterns[0];
  if (top) parts.overview!.push(`The most frequent pattern is "${top.template}" (${plural(top.count, 'log')}, ${pct(top.share)}).`);
  const topError = r.top_patterns.find((p) => p.levels.includes('error'));
  if (topError) parts.errors!.push(`The leading error pattern is "${topError.template}" (${plural(topError.count, 'log')}).`);
  if (r.new_patterns.length > 0) {
    parts.new_patterns!.push(
      `${plural(r.new_patterns.length, 'new pattern')} appeared, led by "${r.new_patterns[0]?.template}" (${plural(r.new_patterns[0]?.count ?? 0, 'log')}).`,
    );
  }
  const first = r.anomalies[0];
  if (first) {
    const what = first.kind === 'level' ? `${first.level} logs` : `"${first.template}"`;
    parts.anomalies!.push(
      `${plural(r.anomalies.length, 'rate anomaly')}: ${what} reached ${first.count} in the ${first.bucket_seconds / 60}-minute bucket from ${first.bucket_start}` +
        (first.ratio === null ? ' with no history before.' : `, ${first.ratio}× its usual ${first.baseline_per_bucket} per bucket.`),
    );
  }
  const source = r.top_sources[0];
  if (source) parts.sources!.push(`The busiest source is ${source.source ?? 'unnamed'} (${plural(source.count, 'log')}).`);
  for (const area of ['performance', 'security'] as const) {
    const ids = r.focus[area];
    if (!ids) continue;
    const named = r.top_patterns.filter((p) => ids.includes(p.pattern_id));
    parts[area]!.push(
      named.length === 0
        ? `Nothing in the top patterns points to ${area} problems.`
        : `${area === 'performance' ? 'Performance' : 'Security'}-related patterns: ${named
            .slice(0, 3)
            .map((p) => `"${p.template}" (${p.count})`)
            .join(', ')}.`,
    );
  }
  // Focus areas narrow the summary to what was asked, in the order asked.
  const order: readonly string[] = r.focus_areas.length > 0 ? r.focus_areas : ['errors', 'anomalies', 'new_patterns', 'sources'];
  return [...parts.overview!, ...order.flatMap((a) => parts[a] ?? [])].join(' ');
}
