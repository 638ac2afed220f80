import { fileURLToPath } from 'node:url';
import { describeMigrateCli } from '@repo/db/testing';
import { openDatabase } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { schema } from '../src/db/index.js';

// The suite (@repo/db/testing) runs this app's built CLI over its own migrations and configuration.
describeMigrateCli({
  app: 'marketplace-api',
  appDir: fileURLToPath(new URL('..', import.meta.url)),
  schema,
  loadConfig,
  open: (env) => openDatabase(loadConfig(env), { migrate: false }),
  productionEnv: { SMTP_URL: 'smtp://127.0.0.1:1', JWT_SECRET: 'a-test-secret-that-is-long-enough-0123456789' },
});
