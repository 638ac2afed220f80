/** The broadcasts module's public entry: what the rest of the app may use of it. */
import { createWebPushSender } from '../../integrations/push/push.js';
import type { ModuleContext } from '../context.js';
import { broadcastsRoutes } from './broadcasts.routes.js';
import { createBroadcastsService } from './broadcasts.service.js';

export type { BatchOutcome, BroadcastsService } from './broadcasts.service.js';

/** Broadcasts from the back office: the routes queue them, the job (jobs/broadcasts.ts) sends them in batches. */
export function broadcastsModule({ db, recorder, mailer, config, pushAgent, app }: ModuleContext) {
  const broadcasts = createBroadcastsService({
    db,
    recorder,
    mailer,
    push: config.push.vapid ? createWebPushSender({ vapid: config.push.vapid, agent: pushAgent }) : undefined,
    batchSize: config.broadcasts.batchSize,
    log: app.log,
  });
  return { broadcasts, routes: broadcastsRoutes({ broadcasts }) };
}
