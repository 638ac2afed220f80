import type { FastifyPluginAsyncZod } from '@repo/http';
import { errorResponses } from '@repo/schemas';
import { actorOf, callerOf } from '../../lib/context.js';
import type { PrestatairesService } from './prestataires.service.js';
import {
  FavouriteEnvelope,
  PrestataireEnvelope,
  PrestataireListEnvelope,
  PrestataireParams,
  presentPrestataire,
  presentSummary,
  SearchPrestatairesQuery,
} from './prestataires.schemas.js';

/** Public search and pages of prestataires, and a client's favourites. */
export function prestatairesRoutes(deps: { prestataires: PrestatairesService }): FastifyPluginAsyncZod {
  return async (app) => {
    app.get(
      '/prestataires',
      {
        schema: {
          operationId: 'searchPrestataires',
          tags: ['prestataires'],
          summary:
            'Validated prestataires: within `radius_km` (default 30, max 200) of latitude/longitude or of a city, offering a service or a category, matching `q`, rated at least `min_rating`; sorted by distance (default with a point), rating (default otherwise) or price',
          security: [],
          querystring: SearchPrestatairesQuery,
          response: { 200: PrestataireListEnvelope, ...errorResponses(422, 429) },
        },
      },
      async (request) => {
        const { rows, meta } = await deps.prestataires.search(request.query);
        return { data: rows.map((r) => presentSummary(r.row, r.services)), meta };
      },
    );

    app.get(
      '/prestataires/:prestataire',
      {
        // A public page that says more to a signed-in client (is it a favourite); a token, when
        // sent, must be valid (401 otherwise) rather than silently ignored.
        onRequest: app.auth.authenticateOptional,
        schema: {
          operationId: 'getPrestataire',
          tags: ['prestataires'],
          summary: "A validated prestataire's public page: services and prices, gallery, opening hours",
          security: [{}, { bearerAuth: [] }],
          params: PrestataireParams,
          response: { 200: PrestataireEnvelope, ...errorResponses(401, 404, 422, 429) },
        },
      },
      async (request) => {
        const { detail, isFavourite } = await deps.prestataires.get(callerOf(request), request.params.prestataire);
        return { data: presentPrestataire(detail, isFavourite) };
      },
    );

    app.post(
      '/prestataires/:prestataire/favourite',
      {
        onRequest: app.auth.requireRole('client'),
        schema: {
          operationId: 'toggleFavouritePrestataire',
          tags: ['prestataires'],
          summary: "Adds the prestataire to the client's favourites, or removes it if already there",
          security: [{ bearerAuth: [] }],
          params: PrestataireParams,
          response: { 200: FavouriteEnvelope, ...errorResponses(401, 403, 404, 422, 429) },
        },
      },
      async (request) => {
        const prestataireId = request.params.prestataire;
        const favourite = await deps.prestataires.toggleFavourite(actorOf(request), prestataireId);
        return {
          data: { prestataire_id: prestataireId, favourite },
          message: favourite ? 'Added to favourites' : 'Removed from favourites',
        };
      },
    );
  };
}
