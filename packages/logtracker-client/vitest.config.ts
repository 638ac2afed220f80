import { secondPass, withoutTestDatabase } from '@repo/db/testing-files';
import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: [
      ...configDefaults.exclude,
      // These open no test database (pure functions, the batcher against local HTTP servers): the
      // pass on PostgreSQL (TEST_DATABASE_ONLY=1) leaves them out.
      ...withoutTestDatabase(new URL('.', import.meta.url).pathname, ['test/parse-line.test.ts', 'test/batcher.test.ts']),
      // `logtracker run` ships through the same batcher as `ship`: what it adds (the command's output
      // passed through, its exit status) does not depend on the server's database, and delivery on
      // PostgreSQL is cli-ship's to prove. Its answer is given once, in the pass on PGlite.
      ...(secondPass ? ['test/cli-run.test.ts'] : []),
    ],
    // One file at a time: the fault test's proxy gives its port back while the server is "down",
    // and a server another file starts meanwhile could be given it.
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
