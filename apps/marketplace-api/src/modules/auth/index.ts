/** The auth module's public entry: what the rest of the app may use of it. */
import type { ModuleContext } from '../context.js';
import type { EmailVerificationService } from '../email-codes/index.js';
import { authRoutes } from './auth.routes.js';
import { createAuthService } from './auth.service.js';

export { nameField, optionalPhoneField, phoneField, siretField, UserEnvelope } from './auth.schemas.js';
export { type AuthService } from './auth.service.js';

/** Registration and sign-in. */
export function authModule(ctx: ModuleContext, more: { emailVerification: EmailVerificationService }) {
  const { db, users, recorder, mailer, throttle, app } = ctx;
  const auth = createAuthService({ db, users, throttle, sessions: app.auth.store, mailer, emailVerification: more.emailVerification, recorder });
  return { auth, routes: authRoutes({ auth }) };
}
