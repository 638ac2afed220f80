import { createOpenAiCompatibleModel } from '@repo/ai';
import type { CounterSource, LoginThrottle } from '@repo/auth';
import { createFanout, type DatabaseHandle } from '@repo/db';
import { healthRoutes } from '@repo/http';
import type { FastifyInstance } from 'fastify';
import type { Agent } from 'node:https';
import type { Config } from '../config.js';
import type { Db, Schema } from '../db/index.js';
import { createIdentityVerifiers } from '../integrations/identity/identity.js';
import { createBuiltinKycVerifier } from '../integrations/kyc/kyc.js';
import type { Mailer } from '../integrations/mail/mailer.js';
import { createRepairData } from '../integrations/repairdata/index.js';
import type { Storage } from '../integrations/storage/storage.js';
import { createClock } from '../lib/time.js';
import { accountRoutes } from './my-account/account.routes.js';
import { createAccountService } from './my-account/account.service.js';
import type { ActivityRecorder } from './activity-log/activity-log.recorder.js';
import { activityLogRoutes } from './activity-log/activity-log.routes.js';
import { createActivityLogService } from './activity-log/activity-log.service.js';
import { adminLifecycleRoutes } from './booking/admin-views/admin-views.routes.js';
import { createAdminLifecycleService } from './booking/admin-views/admin-views.service.js';
import { adminServicesRoutes } from './admin-services/admin-services.routes.js';
import { createAdminServicesService } from './admin-services/admin-services.service.js';
import { adminPrestatairesRoutes } from './prestataire-vetting/admin-review.routes.js';
import { createAdminPrestatairesService } from './prestataire-vetting/admin-review.service.js';
import { adminUsersRoutes } from './admin-users/admin-users.routes.js';
import { createAdminUsersService } from './admin-users/admin-users.service.js';
import { adminsRoutes } from './admin-users/admins.routes.js';
import { createAdminsService } from './admin-users/admins.service.js';
import { aiRoutes } from './ai/ai.routes.js';
import { appointmentsRoutes } from './booking/appointments/appointments.routes.js';
import { createAppointmentsService } from './booking/appointments/appointments.service.js';
import { createAiService } from './ai/ai.service.js';
import { createSuggestionsService } from './ai/suggestions.service.js';
import { availabilityRoutes } from './booking/slots/slots.routes.js';
import { createAvailabilityService } from './booking/slots/slots.service.js';
import { authRoutes } from './auth/auth.routes.js';
import { createAuthService } from './auth/auth.service.js';
import { catalogueRoutes } from './catalogue/catalogue.routes.js';
import { createCatalogueService } from './catalogue/catalogue.service.js';
import { complianceRoutes } from './prestataire-vetting/compliance.routes.js';
import { createComplianceService } from './prestataire-vetting/compliance.service.js';
import { documentsRoutes } from './prestataire-vetting/documents.routes.js';
import { createDocumentsService } from './prestataire-vetting/documents.service.js';
import { emailChangeRoutes } from './email-codes/email-change.routes.js';
import { createEmailChangeService } from './email-codes/email-change.service.js';
import { emailVerificationRoutes } from './email-codes/email-verification.routes.js';
import { createEmailVerificationService } from './email-codes/email-verification.service.js';
import { kycRoutes } from './identity-check/identity-check.routes.js';
import { createKycService } from './identity-check/identity-check.service.js';
import { laborRoutes } from './labor/labor.routes.js';
import { createLifecycleTimersService } from './booking/timers/timers.service.js';
import { createLaborService } from './labor/labor.service.js';
import { conversationsRoutes } from './conversations/conversations.routes.js';
import { createConversationsService } from './conversations/conversations.service.js';
import { createNotificationsConsumer, createWebPushConsumer } from './notifications/notifications.consumer.js';
import { notificationsRoutes } from './notifications/notifications.routes.js';
import { createNotificationsService } from './notifications/notifications.service.js';
import { createWebPushSender } from '../integrations/push/push.js';
import { mediaRoutes } from './media/media.routes.js';
import { galleryRoutes } from './gallery/gallery.routes.js';
import { createGalleryService } from './gallery/gallery.service.js';
import { prestataireServicesRoutes } from './prestataire-services/prestataire-services.routes.js';
import { createPrestataireServicesService } from './prestataire-services/prestataire-services.service.js';
import { scheduleRoutes } from './booking/opening-hours/opening-hours.routes.js';
import { createScheduleService } from './booking/opening-hours/opening-hours.service.js';
import { passwordResetRoutes } from './email-codes/password-reset.routes.js';
import { createPasswordResetService } from './email-codes/password-reset.service.js';
import { prestataireHomeRoutes } from './prestataire-dashboard/home.routes.js';
import { createPrestataireHomeService } from './prestataire-dashboard/home.service.js';
import { prestataireProfileRoutes } from './prestataire-profile/prestataire-profile.routes.js';
import { createPrestataireProfileService } from './prestataire-profile/prestataire-profile.service.js';
import { prestatairesRoutes } from './prestataires/prestataires.routes.js';
import { createPrestatairesService } from './prestataires/prestataires.service.js';
import { reviewsRoutes } from './reviews/reviews.routes.js';
import { createReviewsService } from './reviews/reviews.service.js';
import { offersRoutes } from './booking/offers/offers.routes.js';
import { createOffersService } from './booking/offers/offers.service.js';
import { repairDataRoutes } from './repairdata/repairdata.routes.js';
import { createRepairDataService } from './repairdata/repairdata.service.js';
import { serviceRequestsRoutes } from './booking/requests/requests.routes.js';
import { createServiceRequestsService } from './booking/requests/requests.service.js';
import { createSettingsService } from './settings/settings.service.js';
import { socialAuthRoutes } from './social-auth/social-auth.routes.js';
import type { Outbox, OutboxConsumer } from './outbox/outbox.js';
import { createRealtimeConsumer } from './realtime/realtime.consumer.js';
import { createRealtimeHub } from './realtime/realtime.hub.js';
import { isConversationParty } from './realtime/realtime.repository.js';
import { broadcastingAuthRoutes, pusherSocketRoutes } from './realtime/realtime.routes.js';
import { createRealtimeService } from './realtime/realtime.service.js';
import { createPaymentProcessor, type PaymentProcessor } from '../integrations/payments/index.js';
import { paymentsOutboxConsumer } from './payments/payments.consumer.js';
import { paymentsRoutes } from './payments/payments.routes.js';
import { createPaymentsService, type PaymentsService } from './payments/payments.service.js';
import { createReconciliation, type Reconciliation } from './payments/reconciliation.service.js';
import { settingsRoutes } from './settings/settings.routes.js';
import { createSocialAuthService } from './social-auth/social-auth.service.js';
import { tariffGridsRoutes } from './tariff-grids/tariff-grids.routes.js';
import { createTariffGridsService } from './tariff-grids/tariff-grids.service.js';
import type { UsersService } from './user-store/users.service.js';
import { vehiclesRoutes } from './vehicles/vehicles.routes.js';
import { createVehiclesService } from './vehicles/vehicles.service.js';
import { broadcastsRoutes } from './broadcasts/broadcasts.routes.js';
import { createBroadcastsService } from './broadcasts/broadcasts.service.js';
import { contentRoutes } from './content/content.routes.js';
import { createContentService } from './content/content.service.js';
import { adminStatsRoutes } from './admin-stats/admin-stats.routes.js';
import { createAdminStatsService } from './admin-stats/admin-stats.service.js';
import { prestataireDashboardRoutes } from './prestataire-dashboard/stats.routes.js';
import { createPrestataireDashboardService } from './prestataire-dashboard/stats.service.js';

export const VERSION = '1.0.0';

/** What the modules are built from; each module's services are created from these in `registerModules`. */
export interface ModuleDeps {
  config: Readonly<Config>;
  database: DatabaseHandle<Schema>;
  db: Db;
  users: UsersService;
  /** The one writer of the activity log. */
  recorder: ActivityRecorder;
  /** The one writer of domain events: every state move publishes through it, in its own transaction. */
  outbox: Outbox;
  mailer: Mailer;
  storage: Storage;
  throttle: LoginThrottle;
  /** Counters every instance shares (RATE_LIMIT_STORE), for the e-mail send limits; in memory when absent. */
  counters?: CounterSource;
  /** The payment processor (tests pass the built-in one they drive); built from the config otherwise. */
  paymentProcessor?: PaymentProcessor;
  /** The HTTPS agent of web push (tests trust their local push service with it). */
  pushAgent?: Agent;
}

/** Wires services to their dependencies and mounts every module under `/api/v1`. */
export async function registerModules(app: FastifyInstance, deps: ModuleDeps) {
  // One instance, so its per-address send limit counts every route that sends a verification e-mail.
  const { db, users, recorder, outbox } = deps;
  // The platform settings, one instance: the modules whose rules depend on them take it.
  const settings = createSettingsService({ db, recorder });
  // The readers of the outbox (notifications, real-time, payments…): each module that reacts to
  // domain events adds its consumer here; app.ts delivers the outbox to them on a timer.
  const outboxConsumers: OutboxConsumer[] = [];
  // Free time and slots: the public pages read it, and every booking checks its slot with it.
  const availability = createAvailabilityService({ db });
  // Real-time (DESIGN.md §8): the Pusher-protocol socket at /app/{key}, fed by the outbox through a
  // fan-out that reaches every instance's subscribers (LISTEN/NOTIFY; within the process on PGlite).
  const { pusher } = deps.config;
  const realtimeFanout = createFanout(deps.database, {
    channel: 'realtime',
    onError: (error) => app.log.warn({ err: error }, 'real-time fan-out: a message was not delivered'),
  });
  const realtimeHub = createRealtimeHub({ fanout: realtimeFanout, options: pusher, log: app.log });
  app.addHook('onReady', () => realtimeFanout.start());
  app.addHook('onClose', async () => {
    realtimeHub.close();
    await realtimeFanout.close();
  });
  outboxConsumers.push(createRealtimeConsumer({ hub: realtimeHub }));
  await app.register(pusherSocketRoutes({ hub: realtimeHub }));
  // Stripe when configured, the built-in processor otherwise; a test may hand its own.
  const paymentProcessor = deps.paymentProcessor ?? createPaymentProcessor(deps.config);
  const mailLinks = { db, mailer: deps.mailer, appUrl: deps.config.appUrl, recorder, counters: deps.counters };
  const emailChange = createEmailChangeService(mailLinks);
  const emailVerification = createEmailVerificationService({ ...mailLinks, emailChange });
  const authService = createAuthService({
    db,
    users,
    throttle: deps.throttle,
    sessions: app.auth.store,
    mailer: deps.mailer,
    emailVerification,
    recorder,
  });
  const accountService = createAccountService({
    db,
    users,
    auth: authService,
    storage: deps.storage,
    mailer: deps.mailer,
    emailChange,
    recorder,
    log: app.log,
  });
  // The platform's calendar: "today" for expiry dates and ages (PLATFORM_TIME_ZONE).
  const clock = createClock(deps.config.platformTimeZone);
  const tariffGrids = createTariffGridsService({ db, recorder });
  const activityLog = createActivityLogService({ db });
  // One repair-data source for the app: the vendor's API behind the database cache, or the bundled dataset.
  const repairData = createRepairData(deps.config, { db, log: app.log });
  const { ai: aiConfig } = deps.config;
  const ai = createAiService({
    db,
    model: aiConfig.url
      ? createOpenAiCompatibleModel({ url: aiConfig.url, apiKey: aiConfig.apiKey, model: aiConfig.model, timeoutMs: aiConfig.timeoutMs })
      : undefined,
    cacheTtlHours: aiConfig.cacheTtlHours,
    log: app.log,
  });
  // Appointments and the lifecycle timers (request and offer expiry, auto-completion).
  const appointments = createAppointmentsService({ db, recorder, outbox, settings, availability });
  const lifecycleTimers = createLifecycleTimersService({ db, recorder, outbox, settings });
  let paymentsService: PaymentsService | undefined;
  let reconciliationService: Reconciliation | undefined;
  // Broadcasts from the back office: the routes queue them, the job (jobs/broadcasts.ts) sends them in batches.
  const broadcasts = createBroadcastsService({
    db,
    recorder,
    mailer: deps.mailer,
    push: deps.config.push.vapid ? createWebPushSender({ vapid: deps.config.push.vapid, agent: deps.pushAgent }) : undefined,
    batchSize: deps.config.broadcasts.batchSize,
    log: app.log,
  });
  await app.register(
    async (api) => {
      await api.register(healthRoutes({ version: VERSION, driver: deps.database.driver, ping: deps.database.ping, schemaStatus: deps.database.schemaStatus }));
      await api.register(mediaRoutes({ storage: deps.storage }));
      // Accounts and sign-in
      await api.register(authRoutes({ auth: authService }));
      await api.register(emailVerificationRoutes({ emailVerification }));
      await api.register(emailChangeRoutes({ emailChange }));
      await api.register(passwordResetRoutes({ passwordReset: createPasswordResetService(mailLinks) }));
      await api.register(
        socialAuthRoutes({
          socialAuth: createSocialAuthService({
            db,
            users,
            verifiers: createIdentityVerifiers(deps.config.social),
            recorder,
            log: app.log,
          }),
        }),
      );
      await api.register(accountRoutes({ account: accountService }));
      await api.register(
        kycRoutes({ kyc: createKycService({ db, verifier: createBuiltinKycVerifier({ today: clock.today }), clock, recorder, outbox }) }),
      );
      await api.register(prestataireProfileRoutes({ prestataireProfile: createPrestataireProfileService({ db, recorder }) }));
      // Catalogue and discovery
      await api.register(catalogueRoutes({ catalogue: createCatalogueService({ db }) }));
      await api.register(prestatairesRoutes({ prestataires: createPrestatairesService({ db }) }));
      await api.register(availabilityRoutes({ availability }));
      // Vehicles, repair data, estimates, AI
      await api.register(vehiclesRoutes({ vehicles: createVehiclesService({ db, repairData }) }));
      await api.register(repairDataRoutes({ repairData: createRepairDataService({ repairData }) }));
      await api.register(laborRoutes({ labor: createLaborService({ db, repairData, tariffGrids, ai }) }));
      await api.register(
        aiRoutes({
          ai,
          suggestions: createSuggestionsService({ db, ai, repairData }),
          modelName: aiConfig.url ? aiConfig.model : 'builtin',
        }),
      );
      // Onboarding, compliance and administration
      await api.register(documentsRoutes({ documents: createDocumentsService({ db, storage: deps.storage, clock, recorder, outbox }) }));
      await api.register(
        adminPrestatairesRoutes({
          adminPrestataires: createAdminPrestatairesService({ db, mailer: deps.mailer, clock, recorder, outbox }),
        }),
      );
      await api.register(complianceRoutes({ compliance: createComplianceService({ db, mailer: deps.mailer, clock, recorder, outbox }) }));
      await api.register(
        adminUsersRoutes({
          adminUsers: createAdminUsersService({
            db,
            mailer: deps.mailer,
            appUrl: deps.config.appUrl,
            sessionTtlDays: deps.config.auth.tokenTtlDays,
            users,
            emailVerification,
            activityLog,
            recorder,
          }),
        }),
      );
      await api.register(adminsRoutes({ admins: createAdminsService({ db, users, recorder }) }));
      await api.register(activityLogRoutes({ activityLog }));
      await api.register(tariffGridsRoutes({ tariffGrids }));
      // The prestataire's workspace: services offered, gallery, weekly hours, absences and closures
      await api.register(prestataireServicesRoutes({ prestataireServices: createPrestataireServicesService({ db, recorder }) }));
      await api.register(galleryRoutes({ gallery: createGalleryService({ db, storage: deps.storage, recorder, log: app.log }) }));
      await api.register(scheduleRoutes({ schedule: createScheduleService({ db, recorder }) }));
      // Service requests and offers: clients ask, prestataires quote or accept, an accepted offer books the appointment.
      {
        const lifecycle = { db, recorder, outbox, settings, availability };
        await api.register(serviceRequestsRoutes({ serviceRequests: createServiceRequestsService({ ...lifecycle, storage: deps.storage }) }));
        await api.register(offersRoutes({ offers: createOffersService(lifecycle) }));
      }
      // Admin catalogue, settings and lifecycle reads; the prestataire's home and agenda
      await api.register(adminServicesRoutes({ adminServices: createAdminServicesService({ db, recorder }) }));
      await api.register(settingsRoutes({ settings }));
      await api.register(adminLifecycleRoutes({ adminLifecycle: createAdminLifecycleService({ db, clock }) }));
      await api.register(prestataireHomeRoutes({ prestataireHome: createPrestataireHomeService({ db }) }));
      // Real-time: signatures for the private channels a user may join
      await api.register(
        broadcastingAuthRoutes({
          realtime: createRealtimeService({
            key: pusher.key,
            secret: pusher.secret,
            isParty: (userId, conversationId) => isConversationParty(db, userId, conversationId),
          }),
        }),
      );
      // Appointments
      await api.register(appointmentsRoutes({ appointments }));
      // Payments: paying an appointment, the processor's webhook, transfers on completion, refunds,
      // the prestataire's connected account and payouts, invoices. A conversation's dispute holds
      // the transfer (through the outbox); its resolution refunds what an administrator decided.
      const { payments: paymentsConfig } = deps.config;
      const payments = createPaymentsService({
        db,
        recorder,
        outbox,
        processor: paymentProcessor,
        config: {
          returnUrl: paymentsConfig.returnUrl,
          refreshUrl: paymentsConfig.refreshUrl,
          vatPercent: paymentsConfig.vatPercent,
          timeZone: deps.config.platformTimeZone,
        },
        log: app.log,
      });
      paymentsService = payments;
      outboxConsumers.push(paymentsOutboxConsumer({ payments }));
      reconciliationService = createReconciliation({ db, processor: paymentProcessor, log: app.log });
      await api.register(paymentsRoutes({ payments, reconciliation: reconciliationService, timeZone: deps.config.platformTimeZone }));
      // Conversations, disputes and notifications: the inbox is filled from the outbox's domain
      // events (in the user's language), then each new notification is pushed to the user's browsers
      // when VAPID keys are configured.
      {
        await api.register(conversationsRoutes({ conversations: createConversationsService({ db, recorder, outbox, refunds: payments }) }));
        await api.register(notificationsRoutes({ notifications: createNotificationsService({ db }) }));
        outboxConsumers.push(createNotificationsConsumer({ outbox }));
        const { vapid } = deps.config.push;
        if (vapid) outboxConsumers.push(createWebPushConsumer({ sender: createWebPushSender({ vapid, agent: deps.pushAgent }), log: app.log }));
      }
      // Reviews: a client reviews its completed appointment, administrators moderate, the public reads
      // the approved ones; each moderation move recomputes the prestataire's rating that search sorts by.
      await api.register(reviewsRoutes({ reviews: createReviewsService({ db, recorder, outbox }) }));
      // Editorial content (versioned by administrators, the latest public) and broadcasts with their progress.
      await api.register(contentRoutes({ content: createContentService({ db, recorder }) }));
      await api.register(broadcastsRoutes({ broadcasts }));
      // Dashboards, statistics and exports: the administrators' (platform time zone) and each
      // prestataire's own (its time zone); read-only, aggregated in SQL.
      {
        await api.register(adminStatsRoutes({ adminStats: createAdminStatsService({ db, clock }) }));
        await api.register(prestataireDashboardRoutes({ prestataireDashboard: createPrestataireDashboardService({ db }) }));
      }
    },
    { prefix: '/api/v1' },
  );
  return { outboxConsumers, lifecycleTimers, broadcasts, payments: paymentsService!, reconciliation: reconciliationService! };
}
