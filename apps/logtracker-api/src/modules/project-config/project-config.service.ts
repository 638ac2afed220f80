import type { Actor } from '@repo/auth';
import { withTransaction } from '@repo/db';
import { AppError } from '@repo/http';
import type { DbTx } from '../../db/index.js';
import { DEFAULT_NOTIFICATION_SETTINGS } from '../../db/schema/index.js';
import { projectRecords as projectsRepo } from '../projects/index.js';
import type { WebhookGuard } from '../alerts/index.js';
import type { ProjectAccess } from '../projects/index.js';
import type { UpdateConfigBody } from './project-config.schemas.js';

export function createProjectConfigService(deps: { db: DbTx; access: ProjectAccess; webhookGuard: WebhookGuard }) {
  return {
    async get(actor: Actor, projectId: number) {
      const { project } = await deps.access.member(actor, projectId);
      return project;
    },

    /** Owners only: the secret that signs the project's webhooks, for the receiver to verify them. */
    async webhookSecret(actor: Actor, projectId: number) {
      const { project } = await deps.access.owner(actor, projectId);
      return { projectId: project.id, webhookSecret: project.webhookSecret };
    },

    /** Owners only. Notification settings merge over the current ones, so a partial update keeps the rest. */
    async update(actor: Actor, projectId: number, body: UpdateConfigBody) {
      // The role check runs before the transaction: PGlite serves one transaction at a time, so a
      // query on `db` from inside it would wait for itself.
      await deps.access.owner(actor, projectId);
      const url = body.notification_settings?.webhook_url;
      // Told at once rather than at the first alert; the name is resolved again at each delivery.
      const problem = url ? await deps.webhookGuard.problem(url) : null;
      if (problem) throw AppError.validation({ 'notification_settings.webhook_url': [problem] });
      return withTransaction(deps.db, async (tx) => {
        const project = await projectsRepo.findForUpdate(tx, projectId);
        if (!project) throw AppError.notFound('Project');
        const current = { ...DEFAULT_NOTIFICATION_SETTINGS, ...project.notificationSettings };
        const settings = body.notification_settings
          ? {
              ...current,
              ...body.notification_settings,
              threshold: { ...current.threshold, ...body.notification_settings.threshold },
            }
          : undefined;
        if (settings?.enabled && !settings.webhook_url && settings.email_recipients.length === 0) {
          throw AppError.validation({
            'notification_settings.enabled': ['Enabled notifications need a webhook_url or at least one e-mail recipient'],
          });
        }
        const updated = await projectsRepo.updateProject(tx, projectId, {
          retentionDays: body.retention_days,
          alertLevels: body.alert_levels,
          notificationSettings: settings,
        });
        if (!updated) throw AppError.notFound('Project');
        return updated;
      });
    },
  };
}

export type ProjectConfigService = ReturnType<typeof createProjectConfigService>;
