import type { FastifyPluginAsyncZod } from '@repo/http';
import { envelope, errorResponses, iso, paginatedEnvelope } from '@repo/schemas';
import { z } from 'zod';
import { actorOf } from '../../lib/context.js';
import { DocumentResponse, presentDocument } from './documents.schemas.js';
import { presentUser } from '../user-store/index.js';
import type { AdminPrestatairesService } from './admin-review.service.js';
import {
  DecisionResponse,
  PrestataireDetailResponse,
  PrestataireParams,
  presentDecision,
  presentQueueItem,
  QueueItemResponse,
  QueueQuery,
  RejectBody,
  RequestDocumentsBody,
  ValidateBody,
} from './admin-review.schemas.js';

export function adminPrestatairesRoutes(deps: { adminPrestataires: AdminPrestatairesService }): FastifyPluginAsyncZod {
  return async (app) => {
    const adminOnly = app.auth.requireRole('admin');
    const security = [{ bearerAuth: [] }];
    const service = deps.adminPrestataires;

    app.get(
      '/admin/prestataires/pending',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminListPendingPrestataires',
          tags: ['admin'],
          summary: 'Prestataires awaiting validation (or, with status=documents_requested, awaiting documents), oldest first',
          security,
          querystring: QueueQuery,
          response: { 200: paginatedEnvelope(QueueItemResponse), ...errorResponses(401, 403, 422, 429) },
        },
      },
      async (request) => {
        const { status, page, per_page } = request.query;
        const { rows, meta } = await service.queue(status, page, per_page);
        return { data: rows.map((r) => presentQueueItem(r.user, r.profile, r.documentsCount)), meta };
      },
    );

    app.get(
      '/admin/prestataires/:prestataire',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminShowPrestataire',
          tags: ['admin'],
          summary: 'A prestataire: account, profile, documents and the required-documents checklist',
          security,
          params: PrestataireParams,
          response: { 200: envelope(PrestataireDetailResponse), ...errorResponses(401, 403, 404, 422, 429) },
        },
      },
      async (request) => {
        const d = await service.show(request.params.prestataire);
        return {
          data: {
            user: presentUser(d.user, d.profile),
            suspended_at: iso(d.profile.suspendedAt),
            documents: d.docs.map((doc) => presentDocument(doc, d.today)),
            required: d.required,
            complete: d.complete,
          },
        };
      },
    );

    app.post(
      '/admin/prestataires/:prestataire/validate',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminValidatePrestataire',
          tags: ['admin'],
          summary: 'Validate a pending prestataire, or reinstate a suspended one (e-mails the prestataire)',
          security,
          params: PrestataireParams,
          body: ValidateBody.nullish(),
          response: { 200: envelope(DecisionResponse), ...errorResponses(400, 401, 403, 404, 409, 422, 429) },
        },
      },
      async (request) => {
        const result = await service.validate(actorOf(request), request.params.prestataire, request.body?.note ?? null);
        return {
          data: presentDecision(result),
          message: result.before === 'suspended' ? 'Prestataire reinstated' : 'Prestataire validated',
        };
      },
    );

    app.post(
      '/admin/prestataires/:prestataire/reject',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminRejectPrestataire',
          tags: ['admin'],
          summary: 'Reject a pending prestataire with a reason (e-mailed to it)',
          security,
          params: PrestataireParams,
          body: RejectBody,
          response: { 200: envelope(DecisionResponse), ...errorResponses(400, 401, 403, 404, 409, 422, 429) },
        },
      },
      async (request) => {
        const result = await service.reject(actorOf(request), request.params.prestataire, request.body.reason);
        return { data: presentDecision(result), message: 'Prestataire rejected' };
      },
    );

    app.post(
      '/admin/prestataires/:prestataire/request-documents',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminRequestPrestataireDocuments',
          tags: ['admin'],
          summary: 'Ask a pending prestataire for documents (e-mailed); its next upload puts it back in the queue',
          security,
          params: PrestataireParams,
          body: RequestDocumentsBody,
          response: { 200: envelope(DecisionResponse), ...errorResponses(400, 401, 403, 404, 409, 422, 429) },
        },
      },
      async (request) => {
        const result = await service.requestDocuments(actorOf(request), request.params.prestataire, request.body);
        return { data: presentDecision(result), message: 'Documents requested' };
      },
    );

    app.get(
      '/admin/prestataires/:prestataire/documents',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminListPrestataireDocuments',
          tags: ['admin'],
          summary: "A prestataire's documents, newest first",
          security,
          params: PrestataireParams,
          response: { 200: envelope(z.array(DocumentResponse)), ...errorResponses(401, 403, 404, 422, 429) },
        },
      },
      async (request) => {
        const { docs, today } = await service.documents(request.params.prestataire);
        return { data: docs.map((doc) => presentDocument(doc, today)) };
      },
    );
  };
}
