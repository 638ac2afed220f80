import { pageMeta, pageOffset } from '@repo/http';
import type { DbTx } from '../../db/index.js';
import type { Mailer } from '../../integrations/mail/mailer.js';
import type { Actor } from '../../lib/context.js';
import { addDays, type Clock } from '../../lib/time.js';
import type { ActivityRecorder } from '../activity-log/index.js';
import type { Outbox } from '../outbox/index.js';
import { moveValidation } from './admin-review.service.js';
import { prestataireSuspendedMail } from './compliance.mail.js';
import * as repo from './compliance.repository.js';

/** Keeping validated prestataires compliant: documents running out, and suspension. */
export function createComplianceService(deps: { db: DbTx; mailer: Mailer; clock: Clock; recorder: ActivityRecorder; outbox: Outbox }) {
  const { db, mailer, clock } = deps;
  return {
    /** Documents expiring within `days` days or already expired, soonest first. */
    async expiringDocuments(days: number, page: number, perPage: number) {
      const today = clock.today();
      const { rows, total } = await repo.listExpiring(db, today, addDays(today, days), perPage, pageOffset(page, perPage));
      return { rows, today, meta: pageMeta(page, perPage, total) };
    },

    /**
     * Suspends a validated prestataire: search and new requests stop seeing it at once, since they
     * only consider `validated` profiles. The validate route lifts it.
     */
    async suspend(actor: Actor, prestataireId: number, reason: string) {
      const result = await moveValidation(deps, actor, prestataireId, {
        verb: 'suspend',
        from: ['validated'],
        to: 'suspended',
        action: 'prestataire.suspended',
        set: () => ({ validationNote: reason, suspendedAt: new Date() }),
      });
      mailer.send(prestataireSuspendedMail, { email: result.user.email, lang: result.user.lang }, {
        firstName: result.user.firstName,
        businessName: result.profile.businessName,
        reason,
      });
      return result;
    },
  };
}

export type ComplianceService = ReturnType<typeof createComplianceService>;
