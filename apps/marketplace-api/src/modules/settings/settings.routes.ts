import type { FastifyPluginAsyncZod } from '@repo/http';
import { envelope, errorResponses } from '@repo/schemas';
import { actorOf } from '../../lib/context.js';
import type { SettingsService } from './settings.service.js';
import { presentSettings, SettingsPatch, SettingsResponse } from './settings.schemas.js';

/** The platform's settings, read and changed by administrators. */
export function settingsRoutes(deps: { settings: SettingsService }): FastifyPluginAsyncZod {
  return async (app) => {
    const adminOnly = app.auth.requireRole('admin');
    const security = [{ bearerAuth: [] }];

    app.get(
      '/admin/settings',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminReadSettings',
          tags: ['admin'],
          summary: 'The platform settings: request and offer lifetimes, the cancellation window and fee, the auto-completion delay',
          security,
          response: { 200: envelope(SettingsResponse), ...errorResponses(401, 403, 429) },
        },
      },
      async () => ({ data: presentSettings(await deps.settings.get()) }),
    );

    app.put(
      '/admin/settings',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminUpdateSettings',
          tags: ['admin'],
          summary: 'Change some settings (the keys given); an unknown key or a value out of range answers 422 naming it and nothing is written',
          security,
          body: SettingsPatch,
          response: { 200: envelope(SettingsResponse), ...errorResponses(400, 401, 403, 422, 429) },
        },
      },
      async (request) => {
        const settings = await deps.settings.update(actorOf(request), request.body);
        return { data: presentSettings(settings), message: 'Settings updated' };
      },
    );
  };
}
