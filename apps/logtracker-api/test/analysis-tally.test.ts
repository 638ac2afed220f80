import { describe, expect, it } from 'vitest';
import { AnalysisTally } from '../src/modules/analysis/analysis.tally.js';

const HOUR = 3_600_000;
const from = new Date('2026-03-29T00:00:00.000Z');
const to = new Date(from.getTime() + 24 * HOUR);
const previousFrom = new Date(from.getTime() - 24 * HOUR);
const at = (ms: number) => new Date(from.getTime() + ms).toISOString().replace('Z', '123Z');

describe('the counts a report is built from, taken during the mining run', () => {
  it('counts the range per pattern, level and bucket, and the previous period apart', () => {
    const tally = new AnalysisTally({ previousFrom, from, to, bucketMs: HOUR, levels: ['error', 'info'] });
    tally.observe(at(0), 'error', 1);
    tally.observe(at(HOUR - 1), 'error', 1);
    tally.observe(at(HOUR), 'info', 1);
    tally.observe(at(5 * HOUR + 10), 'info', 2);
    tally.observe(at(-1), 'error', 1); // the previous period
    tally.observe(at(-30 * HOUR), 'error', 1); // before the previous period: not counted
    tally.observe(at(24 * HOUR), 'error', 1); // the range's end is excluded
    tally.observe(at(HOUR), 'debug', 3); // a level the report leaves out

    expect(tally.patternCounts()).toEqual([
      { pattern_id: 1, n: 3 },
      { pattern_id: 2, n: 1 },
    ]);
    expect(tally.patternBuckets()).toEqual(
      expect.arrayContaining([
        { key: '1', bucket: from, n: 2 },
        { key: '1', bucket: new Date(from.getTime() + HOUR), n: 1 },
        { key: '2', bucket: new Date(from.getTime() + 5 * HOUR), n: 1 },
      ]),
    );
    expect(tally.patternBuckets()).toHaveLength(3);
    expect(tally.levelBucketCounts()).toEqual(
      expect.arrayContaining([
        { key: 'error', bucket: from, n: 2 },
        { key: 'info', bucket: new Date(from.getTime() + HOUR), n: 1 },
        { key: 'info', bucket: new Date(from.getTime() + 5 * HOUR), n: 1 },
      ]),
    );
    expect(tally.patternBaselines()).toEqual([{ key: '1', n: 1 }]);
    expect(tally.levelBaselineCounts()).toEqual([{ key: 'error', n: 1 }]);
  });

  it('hands the counts of merged patterns to the patterns that absorbed them, along chains', () => {
    const tally = new AnalysisTally({ previousFrom, from, to, bucketMs: HOUR, levels: ['info'] });
    tally.observe(at(0), 'info', 1);
    tally.observe(at(0), 'info', 2);
    tally.observe(at(HOUR), 'info', 3);
    tally.observe(at(-HOUR), 'info', 1);
    // 1 went into 2, which went into 3.
    tally.merge(new Map([[1, 2], [2, 3]]));
    expect(tally.patternCounts()).toEqual([{ pattern_id: 3, n: 3 }]);
    expect(tally.patternBuckets()).toEqual(
      expect.arrayContaining([
        { key: '3', bucket: from, n: 2 },
        { key: '3', bucket: new Date(from.getTime() + HOUR), n: 1 },
      ]),
    );
    expect(tally.patternBaselines()).toEqual([{ key: '3', n: 1 }]);
  });
});
