import type { FastifyPluginAsyncZod } from '@repo/http';
import { envelope, errorResponses, paginatedEnvelope } from '@repo/schemas';
import { actorOf } from '../../lib/context.js';
import { DecisionResponse, PrestataireParams, presentDecision } from './admin-review.schemas.js';
import { presentDocument } from './documents.schemas.js';
import type { ComplianceService } from './compliance.service.js';
import { ExpiringDocumentResponse, ExpiringQuery, SuspendBody } from './compliance.schemas.js';

export function complianceRoutes(deps: { compliance: ComplianceService }): FastifyPluginAsyncZod {
  return async (app) => {
    const adminOnly = app.auth.requireRole('admin');
    const security = [{ bearerAuth: [] }];

    app.get(
      '/admin/compliance/expiring-documents',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminListExpiringDocuments',
          tags: ['admin'],
          summary: 'Documents of validated or suspended prestataires expiring within `days` days (1–365, default 30) or already expired, soonest first',
          security,
          querystring: ExpiringQuery,
          response: { 200: paginatedEnvelope(ExpiringDocumentResponse), ...errorResponses(401, 403, 422, 429) },
        },
      },
      async (request) => {
        const { days, page, per_page } = request.query;
        const { rows, today, meta } = await deps.compliance.expiringDocuments(days, page, per_page);
        return {
          data: rows.map((r) => ({
            ...presentDocument(r.document, today),
            days_left: r.daysLeft,
            prestataire: { id: r.document.userId, business_name: r.businessName, email: r.email },
          })),
          meta,
        };
      },
    );

    app.post(
      '/admin/compliance/:prestataire/suspend',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminSuspendPrestataire',
          tags: ['admin'],
          summary: 'Suspend a validated prestataire with a reason (hidden from search at once; e-mailed to it)',
          security,
          params: PrestataireParams,
          body: SuspendBody,
          response: { 200: envelope(DecisionResponse), ...errorResponses(400, 401, 403, 404, 409, 422, 429) },
        },
      },
      async (request) => {
        const result = await deps.compliance.suspend(actorOf(request), request.params.prestataire, request.body.reason);
        return { data: presentDecision(result), message: 'Prestataire suspended' };
      },
    );
  };
}
