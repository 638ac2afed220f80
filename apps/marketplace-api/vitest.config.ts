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
    // Run once, on PGlite: files whose answer does not depend on the database server. The OpenAPI
    // document and the client generated from it; and the routes' rules over plain reads and writes
    // (accounts, profiles, documents, reviews, conversations, the back office's lists...): what they
    // test is validation, access and the answers' shapes. Their SQL still runs on PostgreSQL in the
    // second pass, through spec-routes (every route), the route suites and the journey. What does
    // depend on the server stays in both passes: transactions and locks (payments, the ledger,
    // offers, appointments, timers), connections cut or several instances, LISTEN/NOTIFY, the
    // extensions' searches (catalogue, prestataires near a place), statistics, migrations and seeds.
    [
      'test/openapi.test.ts',
      'test/account.test.ts',
      'test/activity-log.test.ts',
      'test/admin-lifecycle.test.ts',
      'test/admin-prestataires.test.ts',
      'test/admin-reviews.test.ts',
      'test/admin-services.test.ts',
      'test/admin-users.test.ts',
      'test/admins.test.ts',
      'test/ai.test.ts',
      'test/auth.test.ts',
      'test/availability.test.ts',
      'test/body-depth.test.ts',
      'test/compliance.test.ts',
      'test/content.test.ts',
      'test/conversations.test.ts',
      'test/documents.test.ts',
      'test/email-change.test.ts',
      'test/email-verification.test.ts',
      'test/gallery.test.ts',
      'test/kyc.test.ts',
      'test/labor.test.ts',
      'test/password-reset.test.ts',
      'test/prestataire-dashboard.test.ts',
      'test/prestataire-profile.test.ts',
      'test/prestataire-requests.test.ts',
      'test/prestataire-services.test.ts',
      'test/push.test.ts',
      'test/repairdata-http.test.ts',
      'test/repairdata-routes.test.ts',
      'test/reviews.test.ts',
      'test/route-table.test.ts',
      'test/schedule.test.ts',
      'test/settings.test.ts',
      'test/social-auth.test.ts',
      'test/tariff-grids.test.ts',
      'test/uploads-malformed.test.ts',
      'test/vehicle-lookup.test.ts',
      'test/vehicles.test.ts',
    ],
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
