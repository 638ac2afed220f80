import { withTransaction } from '@repo/db';
import { AppError, pageMeta, pageOffset } from '@repo/http';
import type { DbTx } from '../../db/index.js';
import type { Actor, Anonymous } from '../../lib/context.js';
import { catalogueRecords as catalogue } from '../catalogue/index.js';
import * as repo from './prestataires.repository.js';
import type { SearchPrestatairesQuery } from './prestataires.schemas.js';

export function createPrestatairesService(deps: { db: DbTx }) {
  const { db } = deps;

  async function visible(prestataireId: number) {
    const found = await repo.findVisible(db, prestataireId);
    if (!found) throw AppError.notFound('Prestataire');
    return found;
  }

  return {
    /** Validated prestataires near a point or a city, offering a service or a category, by distance, rating or price. */
    async search(query: SearchPrestatairesQuery) {
      // The catalogue lookups only decide between an answer and a 422: they run beside the search.
      const origin =
        query.latitude !== undefined && query.longitude !== undefined ? { latitude: query.latitude, longitude: query.longitude } : undefined;
      const city = query.city_id === undefined ? undefined : await catalogue.findCity(db, query.city_id);
      const [service, category, found] = await Promise.all([
        query.service_id === undefined ? undefined : catalogue.findActiveService(db, query.service_id),
        query.category_id === undefined ? undefined : catalogue.findCategory(db, query.category_id),
        query.city_id !== undefined && !city
          ? undefined
          : repo.search(
              db,
              {
                origin: city ? { latitude: city.latitude, longitude: city.longitude } : origin,
                radiusKm: query.radius_km,
                serviceId: query.service_id,
                categoryId: query.category_id,
                q: query.q,
                minRating: query.min_rating,
                sort: query.sort ?? (city || origin ? 'distance' : 'rating'),
              },
              query.per_page,
              pageOffset(query.page, query.per_page),
            ),
      ]);
      const unknown: Record<string, string[]> = {};
      if (query.city_id !== undefined && !city) unknown.city_id = ['Unknown city'];
      if (query.service_id !== undefined && !service) unknown.service_id = ['Unknown service'];
      if (query.category_id !== undefined && !category) unknown.category_id = ['Unknown category'];
      if (Object.keys(unknown).length > 0 || !found) throw AppError.validation(unknown);

      return {
        rows: found.rows.map(({ services, ...row }) => ({ row, services })),
        meta: pageMeta(query.page, query.per_page, found.total),
      };
    },

    /** The public page; `isFavourite` is answered to a signed-in client only. */
    async get(caller: Actor | Anonymous, prestataireId: number) {
      const found = await visible(prestataireId);
      const [details, isFavourite] = await Promise.all([
        repo.detailsOf(db, prestataireId),
        caller.kind === 'user' && caller.role === 'client' ? repo.isFavourite(db, caller.userId, prestataireId) : undefined,
      ]);
      return { detail: { ...found, ...details }, isFavourite };
    },

    /**
     * Adds or removes a favourite. Removing works even once the prestataire is no longer listed,
     * so a client can always tidy its list; adding needs a visible prestataire.
     */
    toggleFavourite(actor: Actor, prestataireId: number) {
      const clientId = actor.userId;
      return withTransaction(db, async (tx) => {
        if (await repo.deleteFavourite(tx, clientId, prestataireId)) return false;
        if (!(await repo.findVisible(tx, prestataireId))) throw AppError.notFound('Prestataire');
        await repo.insertFavourite(tx, clientId, prestataireId);
        return true;
      });
    },
  };
}

export type PrestatairesService = ReturnType<typeof createPrestatairesService>;
