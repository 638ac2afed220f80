import { withoutTestDatabase } from '@repo/db/testing-files';
import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // These open no test database (pure functions, the batcher against local HTTP servers): the
    // pass on PostgreSQL (TEST_DATABASE_ONLY=1) leaves them out.
    exclude: [
      ...configDefaults.exclude,
      ...withoutTestDatabase(new URL('.', import.meta.url).pathname, ['test/parse-line.test.ts', 'test/batcher.test.ts']),
    ],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
