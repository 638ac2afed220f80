import type { LoginThrottle } from '@repo/auth';
import type { DatabaseHandle } from '@repo/db';
import { healthRoutes } from '@repo/http';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.js';
import type { Schema } from '../db/index.js';
import { createOpenAiCompatibleWriter } from '../integrations/ai/openai-compatible.js';
import { noNarrative } from '../integrations/ai/ai.js';
import { alertsRoutes, createAlertsService, type WebhookGuard } from './alerts/index.js';
import { analysisRoutes, createAnalysisService } from './analysis/index.js';
import { explorerRoot, explorerRoutes } from './explorer/index.js';
import { authRoutes, createAuthService } from './auth/index.js';
import { ingestKeysRoutes, type IngestKeysService } from './ingest-keys/index.js';
import { createIngestMetrics, createLogsService, createLogWrites, createWriterAuth, type LogEvents, logsRoutes } from './logs/index.js';
import { createMembersService, membersRoutes } from './members/index.js';
import { otlpRoutes } from './otlp/index.js';
import { createPatternMiningService } from './patterns/index.js';
import { createProjectConfigService, projectConfigRoutes } from './project-config/index.js';
import { createProjectsService, type ProjectAccess, projectsRoutes } from './projects/index.js';
import { createStatsService, statsRoutes } from './stats/index.js';
import { createTailService, tailRoutes } from './tail/index.js';

export const VERSION = '1.0.0';

/** Wires services to their dependencies and mounts every module (under `/api`, OTLP under `/v1`, the log explorer at `/`). */
export async function registerModules(
  app: FastifyInstance,
  deps: {
    config: Readonly<Config>;
    database: DatabaseHandle<Schema>;
    throttle: LoginThrottle;
    access: ProjectAccess;
    events: LogEvents;
    ingestKeys: IngestKeysService;
    webhookGuard: WebhookGuard;
  },
) {
  // Queries on the partitioned logs whose best plan depends on their values (searches, lists bounded
  // in time, statistics, mining, alerts) run on connections that plan each statement for them;
  // accounts, projects, members, inserts of logs and pages unbounded in time on the main pool, whose
  // prepared statements keep one plan (DatabaseHandle.customPlanDb, genericPlans).
  const { db, customPlanDb: logsDb } = deps.database;
  const { access, events, ingestKeys } = deps;
  const auth = createAuthService({ db, throttle: deps.throttle, sessions: app.auth.store });
  // Ingest counters for the metrics (logs accepted, batches, refusals).
  const ingest = createIngestMetrics(app.metrics);
  // Inserts of logs run on the main pool: their plan is the same for any batch, and searches holding
  // every connection of the other pool (a cold project's first searches held all ten for seconds,
  // and batches waiting for one were refused with 503 after DATABASE_ACQUIRE_TIMEOUT_MS) never keep
  // a batch waiting.
  const writes = createLogWrites({ db, writers: deps.config.logs.writers, onStatement: (requests) => ingest.statement(requests) });
  const logs = createLogsService({ db: logsDb, plannedOnce: db, access, events, ingest, writes });
  const writerAuth = createWriterAuth(app, ingestKeys);
  const { batchMaxEntries, batchMaxBytes } = deps.config.logs;
  const { ai } = deps.config;
  const narrative = ai.url
    ? createOpenAiCompatibleWriter({
        url: ai.url,
        apiKey: ai.apiKey,
        model: ai.model,
        timeoutMs: ai.timeoutMs,
        onError: (error) => app.log.warn({ err: error }, 'AI narrative unavailable; the analysis stands without it'),
      })
    : noNarrative;
  const analysis = createAnalysisService({ db: logsDb, access, mining: createPatternMiningService({ db: logsDb }), narrative });

  await app.register(
    async (api) => {
      await api.register(healthRoutes({ version: VERSION, driver: deps.database.driver, ping: deps.database.ping, schemaStatus: deps.database.schemaStatus }));
      await api.register(authRoutes({ auth }));
      await api.register(projectsRoutes({ projects: createProjectsService({ db, access }) }));
      await api.register(membersRoutes({ members: createMembersService({ db, access }) }));
      await api.register(ingestKeysRoutes({ ingestKeys }));
      await api.register(logsRoutes({ logs, writerAuth, batchMaxEntries, batchMaxBytes, ingest }));
      await api.register(tailRoutes({ tail: createTailService({ db, access, events, sessions: app.auth.store, ...deps.config.tail }) }));
      await api.register(statsRoutes({ stats: createStatsService({ db: logsDb, access }) }));
      await api.register(analysisRoutes({ analysis }));
      await api.register(projectConfigRoutes({ config: createProjectConfigService({ db, access, webhookGuard: deps.webhookGuard }) }));
      await api.register(alertsRoutes({ alerts: createAlertsService({ db: logsDb, access }) }));
    },
    { prefix: '/api' },
  );
  await app.register(otlpRoutes({ logs, writerAuth, maxRecords: batchMaxEntries, maxBytes: batchMaxBytes, ingest }));
  // The log explorer page at `/`, when built (packages/log-explorer).
  const explorer = explorerRoot();
  if (explorer) await app.register(explorerRoutes({ root: explorer }));
  else app.log.warn('the log explorer page is not built (pnpm build): / answers 404');
}
