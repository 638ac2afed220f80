import { fileURLToPath } from 'node:url';
import { configDefaults, defineConfig } from 'vitest/config';
import { slowFirst, withoutTestDatabase } from './src/testing-files.js';

export default defineConfig({
  test: {
    // Opening a test database (a PGlite copy, or a server's template) took over vitest's default 10 s
    // twice on a loaded two-core machine: the apps' suites allow 60 s, and so do the packages'.
    hookTimeout: 60_000,
    include: ['test/**/*.test.ts'],
    // Two files at a time (vitest's default is one worker fewer than the cores: one, on two): the
    // migrate CLI's file alone starts PGlite data directories for twenty seconds.
    maxWorkers: 2,
    // These never open the test database (PGlite itself, pure functions, the CLI over a PGlite
    // data directory): the pass on PostgreSQL leaves them out.
    exclude: [
      ...configDefaults.exclude,
      ...withoutTestDatabase(fileURLToPath(new URL('.', import.meta.url)), [
        'test/pglite.test.ts',
        'test/escape-like.test.ts',
        'test/postgres-queue.test.ts',
        'test/migrate-cli.test.ts',
      ]),
    ],
    // The files that run longest, started first (vitest, with no durations, starts the largest).
    sequence: {
      sequencer: slowFirst([
        'test/migrate-cli.test.ts',
        'test/pglite.test.ts',
        'test/testing-snapshot.test.ts',
        'test/testing.test.ts',
        'test/faults.test.ts',
        'test/counters.test.ts',
        'test/database.test.ts',
        'test/fanout.test.ts',
        'test/failover.test.ts',
      ]),
    },
    // What a poll waits for (a flush, a pool going idle, a socket closing) arrives in milliseconds;
    // on a loaded machine 1 s, vitest's default, can fall short.
    expect: { poll: { timeout: 5000 } },
  },
});
