import { healthRoutes } from '@repo/http';
import type { FastifyInstance } from 'fastify';
import { createClock } from '../lib/time.js';
import { activityLogModule } from './activity-log/index.js';
import { adminServicesModule } from './admin-services/index.js';
import { adminStatsModule } from './admin-stats/index.js';
import { adminUsersModule } from './admin-users/index.js';
import { aiModule } from './ai/index.js';
import { authModule } from './auth/index.js';
import { bookingModule } from './booking/index.js';
import { broadcastsModule } from './broadcasts/index.js';
import { catalogueModule } from './catalogue/index.js';
import { contentModule } from './content/index.js';
import type { ModuleContext, ModuleDeps } from './context.js';
import { conversationsModule } from './conversations/index.js';
import { emailCodesModule } from './email-codes/index.js';
import { galleryModule } from './gallery/index.js';
import { identityCheckModule } from './identity-check/index.js';
import { laborModule } from './labor/index.js';
import { mediaModule } from './media/index.js';
import { myAccountModule } from './my-account/index.js';
import { notificationsModule } from './notifications/index.js';
import { paymentsModule } from './payments/index.js';
import { prestataireDashboardModule } from './prestataire-dashboard/index.js';
import { prestataireProfileModule } from './prestataire-profile/index.js';
import { prestataireServicesModule } from './prestataire-services/index.js';
import { prestataireVettingModule } from './prestataire-vetting/index.js';
import { prestatairesModule } from './prestataires/index.js';
import { realtimeModule } from './realtime/index.js';
import { repairDataModule } from './repairdata/index.js';
import { reviewsModule } from './reviews/index.js';
import { createSettingsService, settingsModule } from './settings/index.js';
import { socialAuthModule } from './social-auth/index.js';
import { tariffGridsModule } from './tariff-grids/index.js';
import { vehiclesModule } from './vehicles/index.js';

export type { ModuleDeps } from './context.js';

export const VERSION = '1.0.0';

/**
 * Builds every module from the app's parts, in the order their dependencies ask (a module takes
 * the services of those before it), and mounts their routes under `/api/v1`.
 */
export async function registerModules(app: FastifyInstance, deps: ModuleDeps) {
  const { db, recorder, config } = deps;
  const ctx: ModuleContext = {
    ...deps,
    app,
    settings: createSettingsService({ db, recorder }),
    clock: createClock(config.platformTimeZone),
    consumers: [],
  };
  const realtime = realtimeModule(ctx);
  const emailCodes = emailCodesModule(ctx);
  const auth = authModule(ctx, emailCodes);
  const repairData = repairDataModule(ctx);
  const tariffGrids = tariffGridsModule(ctx);
  const ai = aiModule(ctx, repairData);
  const activityLog = activityLogModule(ctx);
  const booking = bookingModule(ctx);
  const payments = paymentsModule(ctx);
  const broadcasts = broadcastsModule(ctx);
  const mounted = [
    { routes: healthRoutes({ version: VERSION, driver: deps.database.driver, ping: deps.database.ping, schemaStatus: deps.database.schemaStatus }) },
    mediaModule(ctx),
    auth,
    emailCodes,
    socialAuthModule(ctx),
    myAccountModule(ctx, { auth: auth.auth, emailChange: emailCodes.emailChange }),
    identityCheckModule(ctx),
    prestataireProfileModule(ctx),
    catalogueModule(ctx),
    prestatairesModule(ctx),
    vehiclesModule(ctx, repairData),
    repairData,
    laborModule(ctx, { repairData: repairData.repairData, tariffGrids: tariffGrids.tariffGrids, ai: ai.ai }),
    ai,
    prestataireVettingModule(ctx),
    adminUsersModule(ctx, { emailVerification: emailCodes.emailVerification, activityLog: activityLog.activityLog }),
    activityLog,
    tariffGrids,
    prestataireServicesModule(ctx),
    galleryModule(ctx),
    booking,
    adminServicesModule(ctx),
    settingsModule(ctx),
    prestataireDashboardModule(ctx),
    realtime,
    payments,
    conversationsModule(ctx, { refunds: payments.payments }),
    notificationsModule(ctx),
    reviewsModule(ctx),
    contentModule(ctx),
    broadcasts,
    adminStatsModule(ctx),
  ];
  // The Pusher-protocol socket lives at the root (/app/{key}), as Pusher clients expect.
  await app.register(realtime.socket);
  await app.register(
    async (api) => {
      for (const module of mounted) await api.register(module.routes);
    },
    { prefix: '/api/v1' },
  );
  return {
    outboxConsumers: ctx.consumers,
    lifecycleTimers: booking.lifecycleTimers,
    broadcasts: broadcasts.broadcasts,
    payments: payments.payments,
    reconciliation: payments.reconciliation,
  };
}
