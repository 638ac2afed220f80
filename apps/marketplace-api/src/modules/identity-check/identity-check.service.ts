import { withTransaction } from '@repo/db';
import { AppError } from '@repo/http';
import type { DbTx } from '../../db/index.js';
import type { User } from '../../db/schema/index.js';
import { ADULT_AGE, hasAge, type KycVerifier } from '../../integrations/kyc/kyc.js';
import type { Actor } from '../../lib/context.js';
import type { Clock } from '../../lib/time.js';
import { transition } from '../../lib/transitions.js';
import type { ActivityRecorder } from '../activity-log/index.js';
import type { Outbox } from '../outbox/index.js';
import { userRecords } from '../user-store/index.js';
import * as repo from './identity-check.repository.js';
import type { KycBody } from './identity-check.schemas.js';

function alreadyVerified(): AppError {
  return new AppError('conflict', 'Your identity is already verified', { extra: { current_status: 'verified' } });
}

export interface KycOutcome {
  user: User;
  status: 'verified' | 'rejected';
  reasons: string[];
  checkedAt: Date;
}

/** 422 on `birth_date` for a date the platform's calendar has not reached, or an under-age holder. */
function checkBirthDate(birthDate: string, today: string) {
  if (birthDate > today) throw AppError.validation({ birth_date: ['Must not be in the future'] });
  if (!hasAge(birthDate, ADULT_AGE, today)) throw AppError.validation({ birth_date: [`You must be at least ${ADULT_AGE} years old`] });
}

export function createKycService(deps: { db: DbTx; verifier: KycVerifier; clock: Clock; recorder: ActivityRecorder; outbox: Outbox }) {
  const { db, verifier, clock, recorder, outbox } = deps;

  return {
    /**
     * Checks a client's identity document and records the outcome. The verifier runs outside the
     * transaction (a vendor may take seconds); the outcome then moves the account's identity status
     * through its machine, which refuses to overwrite a verification that a concurrent submission
     * recorded meanwhile (409 with `current_status`, the check's row rolled back with it).
     */
    async validate(actor: Actor, body: KycBody): Promise<KycOutcome> {
      const userId = actor.userId;
      checkBirthDate(body.birth_date, clock.today());
      const account = await userRecords.findUserById(db, userId);
      if (!account || account.deletedAt) throw AppError.notFound('User');
      if (account.kycStatus === 'verified') throw alreadyVerified();

      const submission = {
        firstName: body.first_name,
        lastName: body.last_name,
        birthDate: body.birth_date,
        documentType: body.document_type,
        documentNumber: body.document_number,
        documentExpiresOn: body.document_expires_on,
        nationality: body.nationality ?? null,
      };
      const result = await verifier.verify(submission, { firstName: account.firstName, lastName: account.lastName });

      return withTransaction(db, async (tx) => {
        const row = await repo.insertVerification(tx, {
          userId,
          firstName: submission.firstName,
          lastName: submission.lastName,
          birthDate: submission.birthDate,
          documentType: submission.documentType,
          // The full number is personal data the platform has no use for once checked.
          documentNumberLast4: submission.documentNumber.slice(-4),
          nationality: submission.nationality,
          verifier: verifier.name,
          status: result.status,
          reasons: result.reasons,
        });
        const { row: user } = await transition(tx, { recorder, outbox, actor }, repo.kycMachine, userId, {
          verb: result.status === 'verified' ? 'verify' : 'reject the identity of',
          from: repo.UNVERIFIED,
          to: result.status,
          action: 'user.kyc_checked',
          details: { reasons: result.reasons, verifier: verifier.name, verification_id: row.id },
        });
        return { user, status: result.status, reasons: result.reasons, checkedAt: row.createdAt };
      });
    },
  };
}

export type KycService = ReturnType<typeof createKycService>;
