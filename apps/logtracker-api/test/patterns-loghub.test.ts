import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { evaluateDirectory } from '../src/cli/eval-patterns.js';
import { formatTable } from '../src/modules/patterns/evaluation.js';

/**
 * Grouping accuracy on Loghub's labelled 2k samples, which live outside the repository: this file
 * needs LOGHUB_DIR (the directory of the `*_2k.log_structured*.csv` files; `.ci/run` points it at
 * the shared data) and is skipped without it.
 */
const LOGHUB_DIR = process.env.LOGHUB_DIR;

describe.skipIf(!LOGHUB_DIR)('grouping accuracy on the labelled Loghub samples (needs LOGHUB_DIR)', () => {
  it('reaches the published Drain figure on each sample, 0.95 on average on the eight development samples and 0.93 on the others present, with the default options', () => {
    expect(existsSync(LOGHUB_DIR ?? ''), `LOGHUB_DIR=${LOGHUB_DIR} does not exist`).toBe(true);
    const results = evaluateDirectory(LOGHUB_DIR ?? '');
    // eslint-disable-next-line no-console
    console.log(formatTable(results));
    const development = ['Android', 'Apache', 'Hadoop', 'Linux', 'OpenSSH', 'Spark', 'Windows', 'Zookeeper'];
    const samples = results.filter((r) => development.includes(r.sample));
    expect(samples.map((r) => r.sample).sort()).toEqual(development);
    for (const r of samples) {
      expect(r.lines, r.sample).toBe(2000);
      expect(r.accuracy, r.sample).toBeGreaterThanOrEqual(r.drain ?? 1);
    }
    const average = samples.reduce((sum, r) => sum + r.accuracy, 0) / samples.length;
    expect(average).toBeGreaterThanOrEqual(0.95);

    // Loghub's other systems, where the directory holds them (not in the shared data): at least
    // Drain's figure on each, 0.93 on average.
    const unseen = results.filter((r) => !development.includes(r.sample) && r.drain !== undefined);
    for (const r of unseen) expect(r.accuracy, r.sample).toBeGreaterThanOrEqual(r.drain ?? 1);
    if (unseen.length > 0) {
      expect(unseen.reduce((sum, r) => sum + r.accuracy, 0) / unseen.length).toBeGreaterThanOrEqual(0.93);
    }
  });
});
