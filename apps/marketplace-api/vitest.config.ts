import { appTestOptions } from '@repo/db/testing-files';
import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // These never open the test database (pure functions, the migrate CLI over a PGlite data
    // directory of its own, the payment processors against their local peers): the pass on
    // PostgreSQL (TEST_DATABASE_ONLY=1) leaves them out.
    ...appTestOptions(new URL('.', import.meta.url), configDefaults.exclude, [
      'test/commission.test.ts',
      'test/payments-builtin.test.ts',
      'test/stripe-server.test.ts',
      'test/repairdata-builtin.test.ts',
      'test/slots.test.ts',
      'test/text.test.ts',
      'test/time.test.ts',
      'test/vin.test.ts',
      'test/migrate-cli.test.ts',
    ],
    // The OpenAPI document and the client generated from it are the same on either database.
    ['test/openapi.test.ts'],
    // The files that run longest (on either database), started first.
    [
      'test/route-suite.test.ts',
      'test/migrate-cli.test.ts',
      'test/lifecycle-timers.test.ts',
      'test/payments-storm.test.ts',
      'test/payments-faults.test.ts',
      'test/faults.test.ts',
      'test/realtime.test.ts',
      'test/own-schema.test.ts',
      'test/payments.test.ts',
      'test/password-reset.test.ts',
      'test/admin-stats.test.ts',
      'test/metrics.test.ts',
      'test/seed.test.ts',
      'test/openapi.test.ts',
    ]),
    // What a poll waits for (a flush, a pool going idle, a socket closing) arrives in milliseconds;
    // on a loaded machine 1 s, vitest's default, can fall short.
    expect: { poll: { timeout: 5000 } },
  },
});
