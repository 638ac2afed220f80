import type { FastifyPluginAsyncZod } from '@repo/http';
import { envelope, errorResponses, iso } from '@repo/schemas';
import { actorOf } from '../../lib/context.js';
import { presentUser } from '../user-store/index.js';
import { KycBody, KycResultResponse } from './identity-check.schemas.js';
import type { KycService } from './identity-check.service.js';

export function kycRoutes(deps: { kyc: KycService }): FastifyPluginAsyncZod {
  return async (app) => {
    app.post(
      '/client/kyc/validate',
      {
        onRequest: app.auth.requireRole('client'),
        schema: {
          operationId: 'validateClientKyc',
          tags: ['client'],
          summary: 'Submit an identity document for verification (clients)',
          description:
            'Checks the document and that it names the account holder. A rejected check may be submitted again; a verified identity cannot.',
          security: [{ bearerAuth: [] }],
          body: KycBody,
          response: { 200: envelope(KycResultResponse), ...errorResponses(400, 401, 403, 409, 422, 429) },
        },
      },
      async (request) => {
        const result = await deps.kyc.validate(actorOf(request), request.body);
        return {
          data: { status: result.status, reasons: result.reasons, checked_at: iso(result.checkedAt), user: presentUser(result.user) },
          message: result.status === 'verified' ? 'Identity verified' : 'Identity check rejected',
        };
      },
    );
  };
}
