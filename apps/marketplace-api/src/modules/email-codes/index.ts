/** The email-codes module's public entry: what the rest of the app may use of it. */
export { emailChangeRoutes } from './email-change.routes.js';
export { createEmailChangeService, type EmailChangeService } from './email-change.service.js';
export { emailVerificationRoutes } from './email-verification.routes.js';
export { createEmailVerificationService, type EmailVerificationService } from './email-verification.service.js';
export { passwordResetRoutes } from './password-reset.routes.js';
export { createPasswordResetService } from './password-reset.service.js';
