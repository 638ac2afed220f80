import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
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
