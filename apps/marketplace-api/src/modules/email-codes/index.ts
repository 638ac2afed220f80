/** The email-codes module's public entry: what the rest of the app may use of it. */
import type { FastifyInstance } from 'fastify';
import type { ModuleContext } from '../context.js';
import { emailChangeRoutes } from './email-change.routes.js';
import { createEmailChangeService } from './email-change.service.js';
import { emailVerificationRoutes } from './email-verification.routes.js';
import { createEmailVerificationService } from './email-verification.service.js';
import { passwordResetRoutes } from './password-reset.routes.js';
import { createPasswordResetService } from './password-reset.service.js';

export { type EmailChangeService } from './email-change.service.js';
export { type EmailVerificationService } from './email-verification.service.js';

/** Codes and links sent by e-mail: address verification, e-mail change, password reset. */
export function emailCodesModule({ db, mailer, config, recorder, counters }: ModuleContext) {
  // One instance each, so a per-address send limit counts every route that sends to that address.
  const mailLinks = { db, mailer, appUrl: config.appUrl, recorder, counters };
  const emailChange = createEmailChangeService(mailLinks);
  const emailVerification = createEmailVerificationService({ ...mailLinks, emailChange });
  const passwordReset = createPasswordResetService(mailLinks);
  return {
    emailChange,
    emailVerification,
    routes: async (api: FastifyInstance) => {
      await api.register(emailVerificationRoutes({ emailVerification }));
      await api.register(emailChangeRoutes({ emailChange }));
      await api.register(passwordResetRoutes({ passwordReset }));
    },
  };
}
