import type { FastifyPluginAsyncZod } from '@repo/http';
import { errorResponses } from '@repo/schemas';
import { actorOf } from '../../lib/context.js';
import type { PrestataireHomeService } from './home.service.js';
import {
  AgendaEnvelope,
  AgendaQuery,
  HomeEnvelope,
  MAX_AGENDA_DAYS,
  presentAgendaItem,
  presentNewRequest,
  presentPendingOffer,
} from './home.schemas.js';

/** The prestataire's home screen and agenda. */
export function prestataireHomeRoutes(deps: { prestataireHome: PrestataireHomeService }): FastifyPluginAsyncZod {
  return async (app) => {
    const prestataireOnly = app.auth.requireRole('prestataire');
    const security = [{ bearerAuth: [] }];
    const service = deps.prestataireHome;

    app.get(
      '/prestataire/home',
      {
        onRequest: prestataireOnly,
        schema: {
          operationId: 'prestataireHome',
          tags: ['prestataire'],
          summary:
            "New requests it may answer (within its radius for services it offers, or aimed at it), its pending offers, today's appointments (its time zone) and the counts",
          security,
          response: { 200: HomeEnvelope, ...errorResponses(401, 403, 404, 429) },
        },
      },
      async (request) => {
        const actor = actorOf(request);
        const h = await service.home(actor);
        return {
          data: {
            new_requests: h.requests.rows.map((r) => presentNewRequest(r, actor.userId)),
            pending_offers: h.offers.rows.map(presentPendingOffer),
            today_appointments: h.todays.map(presentAgendaItem),
            counts: {
              new_requests: h.requests.total,
              pending_offers: h.offers.total,
              today_appointments: h.todays.length,
              unread_notifications: h.unread,
            },
            timezone: h.timezone,
            today: h.today,
          },
        };
      },
    );

    app.get(
      '/prestataire/agenda',
      {
        onRequest: prestataireOnly,
        schema: {
          operationId: 'prestataireAgenda',
          tags: ['prestataire'],
          summary: `Its appointments starting between two local days (both included; default today and the seven days after; at most ${MAX_AGENDA_DAYS} days), by start; cancelled ones only with include_cancelled=true`,
          security,
          querystring: AgendaQuery,
          response: { 200: AgendaEnvelope, ...errorResponses(401, 403, 404, 422, 429) },
        },
      },
      async (request) => {
        const { rows, timezone, from, to } = await service.agenda(actorOf(request), request.query);
        return { data: rows.map(presentAgendaItem), meta: { timezone, from, to } };
      },
    );
  };
}
