import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // Opening a test database (a PGlite copy, or a server's template) took over vitest's default 10 s
    // twice on a loaded two-core machine: the apps' suites allow 60 s, and so do the packages'.
    hookTimeout: 60_000,
    include: ['test/**/*.test.ts'],
    // The files share their worker's modules (none mocks a module or keeps state in one): each file
    // importing Fastify, its plugins and swagger anew cost more than its tests.
    isolate: false,
  },
});
