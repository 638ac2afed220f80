/** The booking module's public entry: what the rest of the app may use of it. */
import { findOfferRow, findOfferWithRequest } from './offers/offers.repository.js';

export { adminLifecycleRoutes } from './admin-views/admin-views.routes.js';
export { createAdminLifecycleService } from './admin-views/admin-views.service.js';
export { appointmentsRoutes } from './appointments/appointments.routes.js';
export { createAppointmentsService } from './appointments/appointments.service.js';
export { offersRoutes } from './offers/offers.routes.js';
export { presentOffer } from './offers/offers.schemas.js';
export { createOffersService } from './offers/offers.service.js';
export { scheduleRoutes } from './opening-hours/opening-hours.routes.js';
export { createScheduleService } from './opening-hours/opening-hours.service.js';
export { serviceRequestsRoutes } from './requests/requests.routes.js';
export { presentAppointment } from './requests/requests.schemas.js';
export { createServiceRequestsService } from './requests/requests.service.js';
export { availabilityRoutes } from './slots/slots.routes.js';
export { createAvailabilityService } from './slots/slots.service.js';
export { createLifecycleTimersService, type LifecycleTimersService, type TimerName, TIMERS, type TimersResult } from './timers/timers.service.js';

/** An offer's row, and with its request, for the consumers of offer events. */
export const offerRecords = { findOfferRow, findOfferWithRequest };
