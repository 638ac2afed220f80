import { withTransaction } from '@repo/db';
import { AppError, pageMeta, pageOffset } from '@repo/http';
import type { DbTx } from '../../db/index.js';
import type { prestataireProfiles, ValidationStatus } from '../../db/schema/index.js';
import type { Mailer } from '../../integrations/mail/mailer.js';
import type { Actor } from '../../lib/context.js';
import type { Clock } from '../../lib/time.js';
import { transition, type Move } from '../../lib/transitions.js';
import type { ActivityRecorder } from '../activity-log/index.js';
import type { Outbox } from '../outbox/index.js';
import { countDocumentsByUser, listUserDocuments } from './documents.repository.js';
import { requiredChecklist } from './documents.schemas.js';
import {
  prestataireDocumentsRequestedMail,
  prestataireReinstatedMail,
  prestataireRejectedMail,
  prestataireValidatedMail,
} from './admin-review.mail.js';
import * as repo from './admin-review.repository.js';
import type { RequestDocumentsBody } from './admin-review.schemas.js';

/** One move of a prestataire's validation (DESIGN.md §6). */
export type ValidationMove = Move<typeof prestataireProfiles, ValidationStatus>;

/**
 * Applies a validation move through the one transition helper (lock, check, conditional update,
 * activity entry, one transaction) and reads the account the e-mail goes to in that transaction.
 * A prestataire who is not one (client, admin, deleted account) is not found; a state the move does
 * not leave from answers 409 with `current_status`.
 */
export async function moveValidation(
  deps: { db: DbTx; recorder: ActivityRecorder; outbox: Outbox },
  actor: Actor,
  prestataireId: number,
  move: ValidationMove,
) {
  return withTransaction(deps.db, async (tx) => {
    const { row: profile, before } = await transition(tx, { recorder: deps.recorder, outbox: deps.outbox, actor }, repo.validationMachine, prestataireId, move);
    const found = await repo.findPrestataire(tx, prestataireId);
    if (!found) throw AppError.notFound('Prestataire');
    return { user: found.user, profile, before };
  });
}

export function createAdminPrestatairesService(deps: { db: DbTx; mailer: Mailer; clock: Clock; recorder: ActivityRecorder; outbox: Outbox }) {
  const { db, mailer, clock } = deps;

  async function getPrestataire(prestataireId: number) {
    const found = await repo.findPrestataire(db, prestataireId);
    if (!found) throw AppError.notFound('Prestataire');
    return found;
  }

  return {
    /** Prestataires waiting on the platform (`pending`, or `documents_requested`), longest-waiting first. */
    async queue(status: 'pending' | 'documents_requested', page: number, perPage: number) {
      const { rows, total } = await repo.listQueue(db, [status], perPage, pageOffset(page, perPage));
      const counts = await countDocumentsByUser(db, rows.map((r) => r.user.id));
      return { rows: rows.map((r) => ({ ...r, documentsCount: counts.get(r.user.id) ?? 0 })), meta: pageMeta(page, perPage, total) };
    },

    /** Everything an admin needs to decide: account, profile, documents and the checklist. */
    async show(prestataireId: number) {
      const { user, profile } = await getPrestataire(prestataireId);
      const docs = await listUserDocuments(db, prestataireId);
      const today = clock.today();
      return { user, profile, docs, today, ...requiredChecklist(docs, today) };
    },

    async documents(prestataireId: number) {
      await getPrestataire(prestataireId);
      return { docs: await listUserDocuments(db, prestataireId), today: clock.today() };
    },

    /** Approves a pending application, or lifts a compliance suspension. */
    async validate(actor: Actor, prestataireId: number, note: string | null) {
      const result = await moveValidation(deps, actor, prestataireId, {
        verb: 'validate',
        from: ['pending', 'suspended'],
        to: 'validated',
        action: (before) => (before === 'suspended' ? 'prestataire.reinstated' : 'prestataire.validated'),
        // A reinstatement keeps the date of the first validation.
        set: (before) => ({ validationNote: note, validatedAt: before.validatedAt ?? new Date(), suspendedAt: null }),
      });
      const template = result.before === 'suspended' ? prestataireReinstatedMail : prestataireValidatedMail;
      mailer.send(template, { email: result.user.email, lang: result.user.lang }, {
        firstName: result.user.firstName,
        businessName: result.profile.businessName,
        note,
      });
      return result;
    },

    async reject(actor: Actor, prestataireId: number, reason: string) {
      const result = await moveValidation(deps, actor, prestataireId, {
        verb: 'reject',
        from: ['pending'],
        to: 'rejected',
        action: 'prestataire.rejected',
        set: () => ({ validationNote: reason }),
      });
      mailer.send(prestataireRejectedMail, { email: result.user.email, lang: result.user.lang }, {
        firstName: result.user.firstName,
        businessName: result.profile.businessName,
        reason,
      });
      return result;
    },

    async requestDocuments(actor: Actor, prestataireId: number, body: RequestDocumentsBody) {
      const message = body.message ?? null;
      const result = await moveValidation(deps, actor, prestataireId, {
        verb: 'request documents from',
        from: ['pending'],
        to: 'documents_requested',
        action: 'prestataire.documents_requested',
        set: () => ({ validationNote: message }),
        details: { document_types: body.document_types },
      });
      mailer.send(prestataireDocumentsRequestedMail, { email: result.user.email, lang: result.user.lang }, {
        firstName: result.user.firstName,
        businessName: result.profile.businessName,
        documentTypes: body.document_types,
        message,
      });
      return result;
    },
  };
}

export type AdminPrestatairesService = ReturnType<typeof createAdminPrestatairesService>;
