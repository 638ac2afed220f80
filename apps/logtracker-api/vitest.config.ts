import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Each file gets its own database; two workers match the machine's two cores.
    maxWorkers: 2,
    // What a poll waits for (a live tail's frame, an alert) arrives in milliseconds; on a loaded
    // machine (two suites at once on two cores) 1 s, vitest's default, was seen to fall short.
    expect: { poll: { timeout: 5000 } },
  },
});
