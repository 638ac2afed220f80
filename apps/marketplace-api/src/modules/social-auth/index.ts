/** The social-auth module's public entry: what the rest of the app may use of it. */
import { createIdentityVerifiers } from '../../integrations/identity/identity.js';
import type { ModuleContext, Mounted } from '../context.js';
import { socialAuthRoutes } from './social-auth.routes.js';
import { createSocialAuthService } from './social-auth.service.js';

/** Sign-in with Google or Apple. */
export function socialAuthModule({ db, users, config, recorder, app }: ModuleContext): Mounted {
  const socialAuth = createSocialAuthService({ db, users, verifiers: createIdentityVerifiers(config.social), recorder, log: app.log });
  return { routes: socialAuthRoutes({ socialAuth }) };
}
