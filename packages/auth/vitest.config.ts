import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The files share their worker's modules (none mocks a module or keeps state in one): each file
    // importing Fastify, its plugins and drizzle anew cost more than its tests.
    isolate: false,
  },
});
