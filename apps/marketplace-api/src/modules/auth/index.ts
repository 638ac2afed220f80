/** The auth module's public entry: what the rest of the app may use of it. */
export { authRoutes } from './auth.routes.js';
export { nameField, optionalPhoneField, phoneField, siretField, UserEnvelope } from './auth.schemas.js';
export { type AuthService, createAuthService } from './auth.service.js';
