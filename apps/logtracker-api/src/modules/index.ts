import type { LoginThrottle } from '@repo/auth';
import type { DatabaseHandle } from '@repo/db';
import { healthRoutes } from '@repo/http';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.js';
import type { Schema } from '../db/index.js';
import { authRoutes } from './auth/auth.routes.js';
import { createAuthService } from './auth/auth.service.js';
import { logsRoutes } from './logs/logs.routes.js';
import { createLogsService } from './logs/logs.service.js';
import { projectConfigRoutes } from './project-config/project-config.routes.js';
import { createProjectConfigService } from './project-config/project-config.service.js';
import { projectsRoutes } from './projects/projects.routes.js';
import { createProjectAccess, createProjectsService } from './projects/projects.service.js';
import { statsRoutes } from './stats/stats.routes.js';
import { createStatsService } from './stats/stats.service.js';

export const VERSION = '1.0.0';

/** Wires services to their dependencies and mounts every module under `/api`. */
export async function registerModules(
  app: FastifyInstance,
  deps: { config: Readonly<Config>; database: DatabaseHandle<Schema>; throttle: LoginThrottle },
) {
  const { db } = deps.database;
  const access = createProjectAccess({ db });
  const auth = createAuthService({ db, throttle: deps.throttle, sessions: app.auth.store });

  await app.register(
    async (api) => {
      await api.register(healthRoutes({ version: VERSION, driver: deps.database.driver, ping: deps.database.ping }));
      await api.register(authRoutes({ auth }));
      await api.register(projectsRoutes({ projects: createProjectsService({ db, access }) }));
      await api.register(
        logsRoutes({
          logs: createLogsService({ db, access }),
          batchMaxEntries: deps.config.logs.batchMaxEntries,
          batchMaxBytes: deps.config.logs.batchMaxBytes,
        }),
      );
      await api.register(statsRoutes({ stats: createStatsService({ db, access }) }));
      await api.register(projectConfigRoutes({ config: createProjectConfigService({ db, access }) }));
    },
    { prefix: '/api' },
  );
}
