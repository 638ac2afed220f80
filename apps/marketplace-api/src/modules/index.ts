import type { LoginThrottle } from '@repo/auth';
import type { DatabaseHandle } from '@repo/db';
import { healthRoutes } from '@repo/http';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.js';
import type { Db, Schema } from '../db/index.js';
import type { Mailer } from '../integrations/mail/mailer.js';
import type { Storage } from '../integrations/storage/storage.js';
import { mediaRoutes } from './media/media.routes.js';
import type { UsersService } from './users/users.service.js';

export const VERSION = '1.0.0';

/** What the modules are built from; each module's services are created from these in `registerModules`. */
export interface ModuleDeps {
  config: Readonly<Config>;
  database: DatabaseHandle<Schema>;
  db: Db;
  users: UsersService;
  mailer: Mailer;
  storage: Storage;
  throttle: LoginThrottle;
}

/** Wires services to their dependencies and mounts every module under `/api/v1`. */
export async function registerModules(app: FastifyInstance, deps: ModuleDeps) {
  await app.register(
    async (api) => {
      await api.register(healthRoutes({ version: VERSION, driver: deps.database.driver, ping: deps.database.ping }));
      await api.register(mediaRoutes({ storage: deps.storage }));
    },
    { prefix: '/api/v1' },
  );
}
