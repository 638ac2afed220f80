import type { LogLevel } from '../../db/schema/index.js';

export interface KeyedBucket {
  key: string;
  bucket: Date;
  n: number;
}

export interface KeyedCount {
  key: string;
  n: number;
}

/**
 * The counts a report is built from, taken as the mining run goes over the range and its previous
 * period, so the range is read once: per pattern and per level, per bucket of the range, and over
 * the previous period. Buckets start at the range's start (as `date_bin` with that origin).
 */
export class AnalysisTally {
  private readonly fromMs: number;
  private readonly toMs: number;
  private readonly previousFromMs: number;
  private readonly levels: ReadonlySet<LogLevel>;
  /** Per pattern: the count in the range and per bucket index. */
  private readonly patterns = new Map<number, { n: number; buckets: Map<number, number> }>();
  private readonly baselines = new Map<number, number>();
  private readonly levelBuckets = new Map<LogLevel, Map<number, number>>();
  private readonly levelBaselines = new Map<LogLevel, number>();

  constructor(
    private readonly range: { previousFrom: Date; from: Date; to: Date; bucketMs: number; levels: readonly LogLevel[] },
  ) {
    this.fromMs = range.from.getTime();
    this.toMs = range.to.getTime();
    this.previousFromMs = range.previousFrom.getTime();
    this.levels = new Set(range.levels);
  }

  /** A log of the mined span (`ts` as ISO text). */
  readonly observe = (ts: string, level: LogLevel, patternId: number): void => {
    if (!this.levels.has(level)) return;
    const at = Date.parse(ts);
    if (at >= this.fromMs && at < this.toMs) {
      const bucket = Math.floor((at - this.fromMs) / this.range.bucketMs);
      let pattern = this.patterns.get(patternId);
      if (!pattern) this.patterns.set(patternId, (pattern = { n: 0, buckets: new Map() }));
      pattern.n++;
      pattern.buckets.set(bucket, (pattern.buckets.get(bucket) ?? 0) + 1);
      let byBucket = this.levelBuckets.get(level);
      if (!byBucket) this.levelBuckets.set(level, (byBucket = new Map()));
      byBucket.set(bucket, (byBucket.get(bucket) ?? 0) + 1);
    } else if (at >= this.previousFromMs && at < this.fromMs) {
      this.baselines.set(patternId, (this.baselines.get(patternId) ?? 0) + 1);
      this.levelBaselines.set(level, (this.levelBaselines.get(level) ?? 0) + 1);
    }
  };

  /** Folds the counts of patterns the run merged into the patterns that absorbed them. */
  merge(merged: ReadonlyMap<number, number>): void {
    const resolve = (id: number) => {
      let current = id;
      for (let next = merged.get(current); next !== undefined && next !== current; next = merged.get(current)) current = next;
      return current;
    };
    for (const [from] of merged) {
      const to = resolve(from);
      if (to === from) continue;
      const source = this.patterns.get(from);
      if (source) {
        this.patterns.delete(from);
        let target = this.patterns.get(to);
        if (!target) this.patterns.set(to, (target = { n: 0, buckets: new Map() }));
        target.n += source.n;
        for (const [bucket, n] of source.buckets) target.buckets.set(bucket, (target.buckets.get(bucket) ?? 0) + n);
      }
      const baseline = this.baselines.get(from);
      if (baseline !== undefined) {
        this.baselines.delete(from);
        this.baselines.set(to, (this.baselines.get(to) ?? 0) + baseline);
      }
    }
  }

  /** Patterns by their count in the range, largest first (ties by id). */
  patternCounts(): { pattern_id: number; n: number }[] {
    return [...this.patterns]
      .map(([id, p]) => ({ pattern_id: id, n: p.n }))
      .sort((a, b) => b.n - a.n || a.pattern_id - b.pattern_id);
  }

  patternBuckets(): KeyedBucket[] {
    return [...this.patterns].flatMap(([id, p]) => this.rows(String(id), p.buckets));
  }

  patternBaselines(): KeyedCount[] {
    return [...this.baselines].map(([id, n]) => ({ key: String(id), n }));
  }

  levelBucketCounts(): KeyedBucket[] {
    return [...this.levelBuckets].flatMap(([level, buckets]) => this.rows(level, buckets));
  }

  levelBaselineCounts(): KeyedCount[] {
    return [...this.levelBaselines].map(([level, n]) => ({ key: level, n }));
  }

  private rows(key: string, buckets: Map<number, number>): KeyedBucket[] {
    return [...buckets].map(([index, n]) => ({ key, bucket: new Date(this.fromMs + index * this.range.bucketMs), n }));
  }
}
