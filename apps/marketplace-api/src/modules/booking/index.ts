/** The booking module's public entry: what the rest of the app may use of it. */
import type { FastifyInstance } from 'fastify';
import type { ModuleContext } from '../context.js';
import { adminLifecycleRoutes } from './admin-views/admin-views.routes.js';
import { createAdminLifecycleService } from './admin-views/admin-views.service.js';
import { appointmentsRoutes } from './appointments/appointments.routes.js';
import { createAppointmentsService } from './appointments/appointments.service.js';
import { findOfferRow, findOfferWithRequest } from './offers/offers.repository.js';
import { offersRoutes } from './offers/offers.routes.js';
import { createOffersService } from './offers/offers.service.js';
import { scheduleRoutes } from './opening-hours/opening-hours.routes.js';
import { createScheduleService } from './opening-hours/opening-hours.service.js';
import { serviceRequestsRoutes } from './requests/requests.routes.js';
import { createServiceRequestsService } from './requests/requests.service.js';
import { availabilityRoutes } from './slots/slots.routes.js';
import { createAvailabilityService } from './slots/slots.service.js';
import { createLifecycleTimersService } from './timers/timers.service.js';

export { presentOffer } from './offers/offers.schemas.js';
export { presentAppointment } from './requests/requests.schemas.js';
export { createLifecycleTimersService, type LifecycleTimersService, type TimerName, TIMERS, type TimersResult } from './timers/timers.service.js';

/** An offer's row, and with its request, for the consumers of offer events. */
export const offerRecords = { findOfferRow, findOfferWithRequest };

/**
 * Booking: a prestataire's opening hours and free slots; clients ask, prestataires quote, an
 * accepted offer books the appointment; the timers expire and complete; the administrators read it all.
 */
export function bookingModule(ctx: ModuleContext) {
  const { db, recorder, outbox, settings, storage, clock } = ctx;
  // Free time and slots: the public pages read it, and every booking checks its slot with it.
  const availability = createAvailabilityService({ db });
  const lifecycle = { db, recorder, outbox, settings, availability };
  const appointments = createAppointmentsService(lifecycle);
  const lifecycleTimers = createLifecycleTimersService({ db, recorder, outbox, settings });
  return {
    lifecycleTimers,
    routes: async (api: FastifyInstance) => {
      await api.register(availabilityRoutes({ availability }));
      await api.register(scheduleRoutes({ schedule: createScheduleService({ db, recorder }) }));
      await api.register(serviceRequestsRoutes({ serviceRequests: createServiceRequestsService({ ...lifecycle, storage }) }));
      await api.register(offersRoutes({ offers: createOffersService(lifecycle) }));
      await api.register(adminLifecycleRoutes({ adminLifecycle: createAdminLifecycleService({ db, clock }) }));
      await api.register(appointmentsRoutes({ appointments }));
    },
  };
}
