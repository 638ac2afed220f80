import type { FastifyPluginAsyncZod } from '@repo/http';
import { errorResponses, iso } from '@repo/schemas';
import type { AvailabilityService } from './slots.service.js';
import {
  AvailabilityEnvelope,
  PrestataireParams,
  presentDays,
  presentWeekly,
  UpcomingEnvelope,
  UpcomingQuery,
  WeeklyHoursEnvelope,
} from './slots.schemas.js';
import { SLOT_GRID_MINUTES } from './slot-grid.js';

/** A validated prestataire's time as clients see it: weekly hours, closures and absences, free slots. */
export function availabilityRoutes(deps: { availability: AvailabilityService }): FastifyPluginAsyncZod {
  return async (app) => {
    app.get(
      '/prestataires/:prestataire/availabilities',
      {
        onRequest: app.auth.authenticate,
        schema: {
          operationId: 'getPrestataireWeeklyHours',
          tags: ['prestataires'],
          summary: "A validated prestataire's weekly hours (local times in its time zone), sorted by day and time",
          security: [{ bearerAuth: [] }],
          params: PrestataireParams,
          response: { 200: WeeklyHoursEnvelope, ...errorResponses(401, 404, 422, 429) },
        },
      },
      async (request) => {
        const { timezone, weekly } = await deps.availability.weeklyHours(request.params.prestataire);
        return { data: presentWeekly(weekly), meta: { timezone } };
      },
    );

    app.get(
      '/prestataires/:prestataire/availability',
      {
        schema: {
          operationId: 'getPrestataireAvailability',
          tags: ['prestataires'],
          summary: "A validated prestataire's weekly hours, with its closures and absences of the coming 31 days",
          security: [],
          params: PrestataireParams,
          response: { 200: AvailabilityEnvelope, ...errorResponses(404, 422, 429) },
        },
      },
      async (request) => {
        const o = await deps.availability.overview(request.params.prestataire);
        return {
          data: {
            timezone: o.timezone,
            weekly_hours: presentWeekly(o.weekly),
            closures: o.closures.map((c) => ({ start_date: c.startDate, end_date: c.endDate })),
            absences: o.absences.map((a) => ({ starts_at: iso(a.startsAt), ends_at: iso(a.endsAt) })),
          },
        };
      },
    );

    app.get(
      '/prestataires/:prestataire/availability/upcoming',
      {
        schema: {
          operationId: 'getPrestataireUpcomingSlots',
          tags: ['prestataires'],
          summary:
            'The free slots of the coming days (`days` 1–31 from the local date `from`): starts on the local 30-minute grid, at least an hour from now, wholly inside weekly hours minus closures, absences and active appointments; UTC instants',
          security: [],
          params: PrestataireParams,
          querystring: UpcomingQuery,
          response: { 200: UpcomingEnvelope, ...errorResponses(404, 422, 429) },
        },
      },
      async (request) => {
        const q = request.query;
        const result = await deps.availability.upcoming(request.params.prestataire, {
          from: q.from,
          days: q.days,
          durationMinutes: q.duration_minutes,
          serviceId: q.service_id,
        });
        return {
          data: presentDays(result.days),
          meta: { timezone: result.timezone, slot_minutes: SLOT_GRID_MINUTES, duration_minutes: result.durationMinutes },
        };
      },
    );
  };
}
