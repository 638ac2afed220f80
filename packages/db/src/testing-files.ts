import { readFileSync } from 'node:fs';
import { join } from 'node:path';

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
