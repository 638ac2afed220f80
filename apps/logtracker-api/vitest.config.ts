import { appTestOptions } from '@repo/db/testing-files';
import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // These never open the test database (pure functions, the miner, the migrate CLI over a PGlite
    // data directory of its own): the pass on PostgreSQL (TEST_DATABASE_ONLY=1) leaves them out.
    ...appTestOptions(new URL('.', import.meta.url), configDefaults.exclude, [
      'test/drain.test.ts',
      'test/analysis-tally.test.ts',
      'test/patterns-loghub.test.ts',
      'test/migrate-cli.test.ts',
    ],
    // The OpenAPI document and the client generated from it are the same on either database, and so
    // is the log explorer page (its browser tests run on PGlite; `pnpm test` runs them after the
    // other files, alone, so that no other file's work shows in the frames they time). Mining 100 000
    // logs is the miner's work, timed on the default database; its SQL runs on PostgreSQL in
    // analysis.test.ts.
    ['test/openapi.test.ts', 'test/explorer.test.ts', 'test/analysis-scale.test.ts'],
    // The files that run longest (on either database), started first.
    [
      'test/one-database.test.ts',
      'test/retention.test.ts',
      'test/migrate-cli.test.ts',
      'test/analysis-scale.test.ts',
      'test/storage.test.ts',
      'test/logs.test.ts',
      'test/route-suite.test.ts',
      'test/faults.test.ts',
      'test/tail.test.ts',
      'test/openapi.test.ts',
      'test/otlp-exporters.test.ts',
      'test/ingest-keys.test.ts',
      'test/lost-commit.test.ts',
      'test/log-statistics.test.ts',
      'test/alerts-delivery.test.ts',
    ]),
    // What a poll waits for (a live tail's frame, an alert) arrives in milliseconds; on a loaded
    // machine (two suites at once on two cores) 1 s, vitest's default, was seen to fall short.
    expect: { poll: { timeout: 5000 } },
  },
});
