import { AppError } from '@repo/http';
import type { DbTx } from '../../db/index.js';
import type { Actor } from '../../lib/context.js';
import { addDays, DAY_MS, startOfDayIn, todayIn } from '../../lib/time.js';
import * as repo from './home.repository.js';
import { MAX_AGENDA_DAYS, type AgendaQuery } from './home.schemas.js';

/** How many new requests and pending offers the home lists (the counts give the totals). */
const HOME_LIST_SIZE = 10;

/** Days between two `YYYY-MM-DD` dates (calendar days: no time zone enters). */
function daysBetween(from: string, to: string): number {
  return Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / DAY_MS);
}

/** A prestataire's workspace: what is new for it, what it waits on, and its agenda, in its own time zone. */
export function createPrestataireHomeService(deps: { db: DbTx; now?: () => Date }) {
  const { db } = deps;
  const now = deps.now ?? (() => new Date());

  async function profile(actor: Actor) {
    const found = await repo.findProfile(db, actor.userId);
    if (!found) throw AppError.notFound('Prestataire profile');
    return found;
  }

  return {
    /** Appointments starting within local days `from`..`to` (both included); 422 when the range is reversed or too long. */
    async agenda(actor: Actor, query: AgendaQuery) {
      const { timezone } = await profile(actor);
      const from = query.from ?? todayIn(timezone, now());
      const to = query.to ?? addDays(from, 7);
      const span = daysBetween(from, to);
      if (span < 0) throw AppError.validation({ to: ['Must not be before `from`'] });
      if (span + 1 > MAX_AGENDA_DAYS) throw AppError.validation({ to: [`The range may cover at most ${MAX_AGENDA_DAYS} days`] });
      // Local days bound the range: their first instants in the zone, the day after `to` excluded.
      const rows = await repo.appointmentsBetween(
        db,
        actor.userId,
        startOfDayIn(timezone, from),
        startOfDayIn(timezone, addDays(to, 1)),
        query.include_cancelled,
      );
      return { rows, timezone, from, to };
    },

    async home(actor: Actor) {
      const p = await profile(actor);
      const at = now();
      const today = todayIn(p.timezone, at);
      // Only validated prestataires receive requests; without coordinates only direct requests reach one.
      const receives = p.validationStatus === 'validated';
      const workshop: repo.Workshop = {
        prestataireId: actor.userId,
        origin:
          p.latitude !== null && p.longitude !== null ? { latitude: p.latitude, longitude: p.longitude, radiusKm: p.serviceRadiusKm } : null,
      };
      const [requests, offers, todays, unread] = await Promise.all([
        receives ? repo.newRequests(db, workshop, at, HOME_LIST_SIZE) : { rows: [], total: 0 },
        repo.pendingOffers(db, actor.userId, HOME_LIST_SIZE),
        repo.appointmentsBetween(db, actor.userId, startOfDayIn(p.timezone, today), startOfDayIn(p.timezone, addDays(today, 1)), false),
        repo.unreadNotifications(db, actor.userId),
      ]);
      return { requests, offers, todays, unread, timezone: p.timezone, today };
    },
  };
}

export type PrestataireHomeService = ReturnType<typeof createPrestataireHomeService>;
