/** The members module's public entry: what the rest of the app may use of it. */
export { membersRoutes } from './members.routes.js';
export { createMembersService } from './members.service.js';
