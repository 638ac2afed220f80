/** The my-account module's public entry: what the rest of the app may use of it. */
export { accountRoutes } from './account.routes.js';
export { createAccountService } from './account.service.js';
