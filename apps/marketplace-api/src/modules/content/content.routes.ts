import type { FastifyPluginAsyncZod } from '@repo/http';
import { envelope, errorResponses } from '@repo/schemas';
import { actorOf } from '../../lib/context.js';
import type { ContentService } from './content.service.js';
import {
  AdminContentQuery,
  AdminContentResponse,
  ContentBody,
  ContentParams,
  ContentVersionResponse,
  presentAdminContent,
  presentContent,
  presentPublicContent,
  PublicContentQuery,
  PublicContentResponse,
} from './content.schemas.js';

/** Editorial content: versioned by administrators, the latest read by everyone. */
export function contentRoutes(deps: { content: ContentService }): FastifyPluginAsyncZod {
  return async (app) => {
    const adminOnly = app.auth.requireRole('admin');
    const security = [{ bearerAuth: [] }];

    app.get(
      '/admin/content/:key',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminReadContent',
          tags: ['admin'],
          summary: "A content entry in a language: its latest version (or `version`), with every version's number, date and author",
          security,
          params: ContentParams,
          querystring: AdminContentQuery,
          response: { 200: envelope(AdminContentResponse), ...errorResponses(401, 403, 404, 422, 429) },
        },
      },
      async (request) => {
        const { key } = request.params;
        const { lang, version } = request.query;
        const { entry, versions } = await deps.content.adminRead(actorOf(request), key, lang, version);
        return { data: presentAdminContent(entry, versions) };
      },
    );

    app.put(
      '/admin/content/:key',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminUpdateContent',
          tags: ['admin'],
          summary: 'Save a new version of a content entry in a language; the previous versions are kept',
          security,
          params: ContentParams,
          body: ContentBody,
          response: { 200: envelope(ContentVersionResponse), ...errorResponses(400, 401, 403, 413, 422, 429) },
        },
      },
      async (request) => {
        const entry = await deps.content.save(actorOf(request), request.params.key, request.body);
        return { data: presentContent(entry), message: 'Content saved' };
      },
    );

    app.get(
      '/content/:key',
      {
        schema: {
          operationId: 'getContent',
          tags: ['catalogue'],
          summary: 'The latest version of a content entry (terms, privacy, FAQ…) in a language, in French when it has none in that one',
          security: [],
          params: ContentParams,
          querystring: PublicContentQuery,
          response: { 200: envelope(PublicContentResponse), ...errorResponses(404, 422, 429) },
        },
      },
      async (request) => ({ data: presentPublicContent(await deps.content.publicRead(request.params.key, request.query.lang)) }),
    );
  };
}
