import type { FastifyPluginAsyncZod } from '@repo/http';
import { envelope, errorResponses, paginatedEnvelope } from '@repo/schemas';
import { actorOf, anonymousOf } from '../../lib/context.js';
import type { ReviewsService } from './reviews.service.js';
import {
  AdminReviewResponse,
  AdminReviewsQuery,
  AppointmentParams,
  CreateReviewBody,
  HideReviewBody,
  PrestataireParams,
  presentAdminReview,
  presentReview,
  PublicReviewsMeta,
  PublicReviewsQuery,
  RejectReviewBody,
  ReviewParams,
  ReviewResponse,
} from './reviews.schemas.js';

/** A client reviews its completed appointment; administrators moderate; the public reads the approved ones. */
export function reviewsRoutes(deps: { reviews: ReviewsService }): FastifyPluginAsyncZod {
  return async (app) => {
    const adminOnly = app.auth.requireRole('admin');
    const security = [{ bearerAuth: [] }];
    const service = deps.reviews;
    const moderated = envelope(AdminReviewResponse);

    app.post(
      '/appointments/:appointment/review',
      {
        onRequest: app.auth.authenticate,
        schema: {
          operationId: 'createAppointmentReview',
          tags: ['appointments'],
          summary: "Review a completed appointment, once: a rating from 1 to 5 and a comment; published once a moderator approves it (its client)",
          security,
          params: AppointmentParams,
          body: CreateReviewBody,
          response: { 201: envelope(ReviewResponse), ...errorResponses(400, 401, 403, 404, 409, 422, 429) },
        },
      },
      async (request, reply) => {
        const review = await service.create(actorOf(request), request.params.appointment, request.body);
        return reply.code(201).send({ data: presentReview(review), message: 'Review submitted for moderation' });
      },
    );

    app.get(
      '/prestataires/:prestataire/reviews',
      {
        schema: {
          operationId: 'listPrestataireReviews',
          tags: ['prestataires'],
          summary: "A validated prestataire's approved reviews, newest first; `meta` carries its rating average, count and distribution",
          security: [],
          params: PrestataireParams,
          querystring: PublicReviewsQuery,
          response: { 200: paginatedEnvelope(ReviewResponse, PublicReviewsMeta), ...errorResponses(404, 422, 429) },
        },
      },
      async (request) => {
        const { rows, meta } = await service.listPublic(anonymousOf(request), request.params.prestataire, request.query);
        return { data: rows.map(presentReview), meta };
      },
    );

    app.get(
      '/admin/reviews',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminListReviews',
          tags: ['admin'],
          summary: 'Reviews to moderate and moderated, newest first, filtered by status, rating and prestataire',
          security,
          querystring: AdminReviewsQuery,
          response: { 200: paginatedEnvelope(AdminReviewResponse), ...errorResponses(401, 403, 422, 429) },
        },
      },
      async (request) => {
        const { rows, meta } = await service.list(actorOf(request), request.query);
        return { data: rows.map(presentAdminReview), meta };
      },
    );

    app.post(
      '/admin/reviews/:review/approve',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminApproveReview',
          tags: ['admin'],
          summary: "Publish a pending review; the prestataire's rating counts it",
          security,
          params: ReviewParams,
          response: { 200: moderated, ...errorResponses(401, 403, 404, 409, 422, 429) },
        },
      },
      async (request) => ({ data: presentAdminReview(await service.approve(actorOf(request), request.params.review)), message: 'Review approved' }),
    );

    app.post(
      '/admin/reviews/:review/reject',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminRejectReview',
          tags: ['admin'],
          summary: 'Refuse a pending review, with a reason',
          security,
          params: ReviewParams,
          body: RejectReviewBody,
          response: { 200: moderated, ...errorResponses(400, 401, 403, 404, 409, 422, 429) },
        },
      },
      async (request) => ({
        data: presentAdminReview(await service.reject(actorOf(request), request.params.review, request.body.reason)),
        message: 'Review rejected',
      }),
    );

    app.post(
      '/admin/reviews/:review/hide',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminHideReview',
          tags: ['admin'],
          summary: "Withdraw an approved review from the public (optional reason); the prestataire's rating no longer counts it",
          security,
          params: ReviewParams,
          body: HideReviewBody.nullish(),
          response: { 200: moderated, ...errorResponses(400, 401, 403, 404, 409, 422, 429) },
        },
      },
      async (request) => ({
        data: presentAdminReview(await service.hide(actorOf(request), request.params.review, request.body?.reason ?? null)),
        message: 'Review hidden',
      }),
    );
  };
}
