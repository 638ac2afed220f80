import { fileURLToPath } from 'node:url';
import { withoutTestDatabase } from '@repo/db/testing-files';
import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // These never open the test database (pure functions, the miner, the migrate CLI over a PGlite
    // data directory of its own): the pass on PostgreSQL (TEST_DATABASE_ONLY=1) leaves them out.
    exclude: [
      ...configDefaults.exclude,
      ...withoutTestDatabase(fileURLToPath(new URL('.', import.meta.url)), [
        'test/commission.test.ts',
        'test/repairdata-builtin.test.ts',
        'test/slots.test.ts',
        'test/time.test.ts',
        'test/vin.test.ts',
        'test/migrate-cli.test.ts',
      ]),
    ],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Each file gets its own database. On PGlite the database runs in the worker: two workers match
    // the machine's two cores. On a server the workers wait on it (and on the CLIs some tests
    // start) a good part of the time: a third keeps the cores busy.
    maxWorkers: process.env.TEST_DATABASE_URL ? 3 : 2,
    // The files share their worker's modules (no test mocks a module or keeps state in one): each
    // file re-importing the app's module graph, and warming it up anew, cost more than its tests.
    isolate: false,
  },
});
