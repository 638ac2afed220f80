import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * What marks a test file as one that runs against the test database: the apps' test helpers, the
 * package's fresh databases, or the server's URL itself.
 */
const OPENS_TEST_DATABASE = /helpers\.js'|createTestDatabase|TEST_DATABASE_URL/;

/**
 * The test files a pass on PostgreSQL leaves out, for a vitest config's `exclude`. CI runs the suite
 * twice, on PGlite and then on PostgreSQL (TEST_DATABASE_ONLY=1, set by .ci/run for that pass): a
 * file that never opens the test database (pure functions, the miner, a CLI over a PGlite data
 * directory of its own) gives the same result both times, so the second pass runs only the files
 * that do. Without TEST_DATABASE_ONLY every file runs. A listed file that does open the test
 * database throws, so that the list cannot quietly keep it from PostgreSQL.
 */
export function withoutTestDatabase(root: string, files: readonly string[]): string[] {
  for (const file of files) {
    if (OPENS_TEST_DATABASE.test(readFileSync(join(root, file), 'utf8'))) {
      throw new Error(`${file} opens the test database: it must run on PostgreSQL too, take it off the list`);
    }
  }
  return process.env.TEST_DATABASE_ONLY ? [...files] : [];
}

/**
 * The vitest `test` options both apps' suites share, for the app whose folder is `root`: its files
 * under test/, `withoutDatabase` left out of the pass on PostgreSQL (see withoutTestDatabase),
 * `defaultExclude` being vitest's `configDefaults.exclude`.
 */
export function appTestOptions(root: URL, defaultExclude: readonly string[], withoutDatabase: readonly string[]) {
  return {
    include: ['test/**/*.test.ts'],
    exclude: [...defaultExclude, ...withoutTestDatabase(fileURLToPath(root), withoutDatabase)],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Each file gets its own database. On PGlite the database runs in the worker: two workers match
    // the machine's two cores. On a server the workers wait on it (and on the CLIs some tests
    // start) a good part of the time: a third keeps the cores busy.
    maxWorkers: process.env.TEST_DATABASE_URL ? 3 : 2,
    // The files share their worker's modules (no test mocks a module or keeps state in one): each
    // file re-importing the app's module graph, and warming it up anew, cost more than its tests.
    isolate: false,
  };
}
