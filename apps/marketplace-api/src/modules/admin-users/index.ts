/** The admin-users module's public entry: what the rest of the app may use of it. */
import type { ActivityLogService } from '../activity-log/index.js';
import type { ModuleContext, Mounted } from '../context.js';
import type { EmailVerificationService } from '../email-codes/index.js';
import { adminUsersRoutes } from './admin-users.routes.js';
import { createAdminUsersService } from './admin-users.service.js';
import { adminsRoutes } from './admins.routes.js';
import { createAdminsService } from './admins.service.js';

/** The administrators' management of user accounts, and of the administrators themselves. */
export function adminUsersModule(ctx: ModuleContext, more: { emailVerification: EmailVerificationService; activityLog: ActivityLogService }): Mounted {
  const { db, users, recorder, mailer, config } = ctx;
  const adminUsers = createAdminUsersService({
    db,
    mailer,
    appUrl: config.appUrl,
    sessionTtlDays: config.auth.tokenTtlDays,
    users,
    emailVerification: more.emailVerification,
    activityLog: more.activityLog,
    recorder,
  });
  const admins = createAdminsService({ db, users, recorder });
  return {
    routes: async (api) => {
      await api.register(adminUsersRoutes({ adminUsers }));
      await api.register(adminsRoutes({ admins }));
    },
  };
}
