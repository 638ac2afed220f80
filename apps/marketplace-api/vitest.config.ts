import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Each file gets its own database; two workers match the machine's two cores.
    maxWorkers: 2,
    // The files share their worker's modules (no test mocks a module or keeps state in one): each
    // file re-importing the app's module graph, and warming it up anew, cost more than its tests.
    isolate: false,
  },
});
