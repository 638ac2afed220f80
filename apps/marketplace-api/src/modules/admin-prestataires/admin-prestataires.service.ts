import { withTransaction } from '@repo/db';
import { AppError, pageMeta, pageOffset } from '@repo/http';
import type { DbTx } from '../../db/index.js';
import type { PrestataireProfile, ValidationStatus } from '../../db/schema/index.js';
import type { Mailer } from '../../integrations/mail/mailer.js';
import type { RequestContext } from '../../lib/context.js';
import type { Clock } from '../../lib/time.js';
import { recordActivity } from '../activity-log/activity-log.repository.js';
import { countDocumentsByUser, listUserDocuments } from '../documents/documents.repository.js';
import { requiredChecklist } from '../documents/documents.schemas.js';
import {
  prestataireDocumentsRequestedMail,
  prestataireReinstatedMail,
  prestataireRejectedMail,
  prestataireValidatedMail,
} from './admin-prestataires.mail.js';
import * as repo from './admin-prestataires.repository.js';
import type { RequestDocumentsBody } from './admin-prestataires.schemas.js';

/** One move of a prestataire's validation (DESIGN.md §6). */
export interface ValidationMove {
  /** What the admin is doing, for the 409 message: "validate", "suspend"… */
  verb: string;
  /** The states the move leaves from; any other answers 409. */
  from: readonly ValidationStatus[];
  to: ValidationStatus;
  /** The activity-log action, which may depend on the state left (validation vs reinstatement). */
  action: (before: ValidationStatus) => string;
  /** The other columns the move sets, from the profile before it. */
  change: (before: PrestataireProfile) => Omit<repo.ValidationChange, 'validationStatus'>;
  /** Extra facts for the activity log (the documents asked for). */
  details?: Record<string, unknown>;
}

/**
 * Applies a validation move in one transaction: the profile is locked, its state checked, updated
 * conditionally and the move logged with before/after. A prestataire who is not one (client, admin,
 * deleted account) is not found; a state the move does not leave from answers 409.
 */
export async function moveValidation(db: DbTx, ctx: RequestContext, prestataireId: number, move: ValidationMove) {
  return withTransaction(db, async (tx) => {
    const found = await repo.lockPrestataire(tx, prestataireId);
    if (!found) throw AppError.notFound('Prestataire');
    const before = found.profile;
    const conflict = new AppError(
      'conflict',
      `Cannot ${move.verb} a prestataire whose validation status is ${before.validationStatus} (allowed from: ${move.from.join(', ')})`,
    );
    if (!move.from.includes(before.validationStatus)) throw conflict;
    const profile = await repo.moveValidationStatus(tx, prestataireId, move.from, { ...move.change(before), validationStatus: move.to });
    if (!profile) throw conflict;
    await recordActivity(tx, ctx, {
      action: move.action(before.validationStatus),
      subjectType: 'user',
      subjectId: prestataireId,
      before: { validation_status: before.validationStatus, validation_note: before.validationNote },
      after: { validation_status: profile.validationStatus, validation_note: profile.validationNote, ...move.details },
    });
    return { user: found.user, profile, before: before.validationStatus };
  });
}

export function createAdminPrestatairesService(deps: { db: DbTx; mailer: Mailer; clock: Clock }) {
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
    async validate(ctx: RequestContext, prestataireId: number, note: string | null) {
      const result = await moveValidation(db, ctx, prestataireId, {
        verb: 'validate',
        from: ['pending', 'suspended'],
        to: 'validated',
        action: (before) => (before === 'suspended' ? 'prestataire.reinstated' : 'prestataire.validated'),
        // A reinstatement keeps the date of the first validation.
        change: (before) => ({ validationNote: note, validatedAt: before.validatedAt ?? new Date(), suspendedAt: null }),
      });
      const template = result.before === 'suspended' ? prestataireReinstatedMail : prestataireValidatedMail;
      mailer.send(template, { email: result.user.email, lang: result.user.lang }, {
        firstName: result.user.firstName,
        businessName: result.profile.businessName,
        note,
      });
      return result;
    },

    async reject(ctx: RequestContext, prestataireId: number, reason: string) {
      const result = await moveValidation(db, ctx, prestataireId, {
        verb: 'reject',
        from: ['pending'],
        to: 'rejected',
        action: () => 'prestataire.rejected',
        change: () => ({ validationNote: reason }),
      });
      mailer.send(prestataireRejectedMail, { email: result.user.email, lang: result.user.lang }, {
        firstName: result.user.firstName,
        businessName: result.profile.businessName,
        reason,
      });
      return result;
    },

    async requestDocuments(ctx: RequestContext, prestataireId: number, body: RequestDocumentsBody) {
      const message = body.message ?? null;
      const result = await moveValidation(db, ctx, prestataireId, {
        verb: 'request documents from',
        from: ['pending'],
        to: 'documents_requested',
        action: () => 'prestataire.documents_requested',
        change: () => ({ validationNote: message }),
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
