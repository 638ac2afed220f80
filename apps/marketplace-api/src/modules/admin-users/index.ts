/** The admin-users module's public entry: what the rest of the app may use of it. */
export { adminUsersRoutes } from './admin-users.routes.js';
export { createAdminUsersService } from './admin-users.service.js';
export { adminsRoutes } from './admins.routes.js';
export { createAdminsService } from './admins.service.js';
