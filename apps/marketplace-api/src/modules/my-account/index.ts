/** The my-account module's public entry: what the rest of the app may use of it. */
import type { AuthService } from '../auth/index.js';
import type { ModuleContext, Mounted } from '../context.js';
import type { EmailChangeService } from '../email-codes/index.js';
import { accountRoutes } from './account.routes.js';
import { createAccountService } from './account.service.js';

/** The signed-in user's own account: `/auth/me`, photo, device token, language, deletion. */
export function myAccountModule(ctx: ModuleContext, more: { auth: AuthService; emailChange: EmailChangeService }): Mounted {
  const { db, users, storage, mailer, recorder, app } = ctx;
  const account = createAccountService({ db, users, auth: more.auth, storage, mailer, emailChange: more.emailChange, recorder, log: app.log });
  return { routes: accountRoutes({ account }) };
}
