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
    // Run once, on PGlite: files whose answer does not depend on the database server. The OpenAPI
    // document and the client generated from it; the log explorer page (its browser tests; `pnpm
    // test` runs them after the other files, alone, so that no other file's work shows in the frames
    // they time); mining 100 000 logs, the miner's work (its SQL runs on PostgreSQL in
    // analysis.test.ts); and the routes' rules over plain reads and writes (accounts, projects,
    // members, keys, parsing OTLP and batches, webhook targets, e-mails): what they test is
    // validation, access and the answers' shapes, and their SQL still runs on PostgreSQL through
    // logs.test.ts, the route suite and the rest. What depends on the server stays in both passes:
    // ingest and searches, the tail and its instances, retention and partitions, statistics,
    // alerts, faults and failover, rate limits, migrations.
    [
      'test/openapi.test.ts',
      'test/explorer.test.ts',
      'test/analysis-scale.test.ts',
      'test/auth.test.ts',
      'test/alerts-email.test.ts',
      'test/batch-text.test.ts',
      'test/body-depth.test.ts',
      'test/hostile-input.test.ts',
      'test/ingest-keys.test.ts',
      'test/members.test.ts',
      'test/otlp-encodings.test.ts',
      'test/otlp.test.ts',
      'test/project-config.test.ts',
      'test/projects.test.ts',
      'test/route-table.test.ts',
      'test/webhook-target.test.ts',
    ],
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
