import { foldAccents } from '../../lib/text.js';

/**
 * Identity checks of clients (KYC). The interface lets an identity-verification vendor be plugged
 * in; the built-in verifier checks what can be checked without one: the document's format and
 * validity, the holder's age, and that the document names the account holder.
 */

export const DOCUMENT_TYPES = ['id_card', 'passport', 'residence_permit', 'driving_licence'] as const;
export type DocumentType = (typeof DOCUMENT_TYPES)[number];

export interface KycSubmission {
  firstName: string;
  lastName: string;
  /** YYYY-MM-DD. */
  birthDate: string;
  documentType: DocumentType;
  /** Upper-cased, without spaces or dashes. */
  documentNumber: string;
  /** YYYY-MM-DD. */
  documentExpiresOn: string;
  /** ISO 3166-1 alpha-2. */
  nationality: string | null;
}

export type KycReason =
  | 'document_number_invalid'
  | 'document_expired'
  | 'under_age'
  | 'first_name_mismatch'
  | 'last_name_mismatch';

export interface KycResult {
  status: 'verified' | 'rejected';
  reasons: KycReason[];
}

export interface KycVerifier {
  /** Recorded with each check, to tell which verifier decided. */
  readonly name: string;
  verify(submission: KycSubmission, user: { firstName: string; lastName: string }): Promise<KycResult>;
}

export const ADULT_AGE = 18;

export function normaliseDocumentNumber(value: string): string {
  return value.replace(/[\s-]/g, '').toUpperCase();
}

const DOCUMENT_FORMATS: Record<DocumentType, { pattern: RegExp; description: string }> = {
  // 12 characters on cards issued until 2021, 9 on the credit-card format issued since.
  id_card: { pattern: /^(?:[A-Z0-9]{12}|[A-Z0-9]{9})$/, description: '9 or 12 letters and digits' },
  passport: { pattern: /^[0-9]{2}[A-Z]{2}[0-9]{5}$/, description: '2 digits, 2 letters and 5 digits (e.g. 12AB34567)' },
  residence_permit: { pattern: /^[A-Z0-9]{6,20}$/, description: '6 to 20 letters and digits' },
  driving_licence: { pattern: /^[A-Z0-9]{6,20}$/, description: '6 to 20 letters and digits' },
};

/** Why a (normalised) document number does not fit its document type, or null when it does. */
export function documentNumberProblem(type: DocumentType, number: string): string | null {
  const format = DOCUMENT_FORMATS[type];
  return format.pattern.test(number) ? null : `Must be ${format.description} for this document type`;
}

/**
 * Whether someone born on `birthDate` is `years` old on `today`. Comparing the anniversary as a
 * string keeps 29 February right: in a common year it falls after the 28th, so the birthday comes on 1 March.
 */
export function hasAge(birthDate: string, years: number, today: string): boolean {
  const anniversary = `${String(Number(birthDate.slice(0, 4)) + years).padStart(4, '0')}${birthDate.slice(4)}`;
  return anniversary <= today;
}

/** A name compared without case, accents or punctuation: "Élodie-Marie" matches "elodie marie". */
export function comparableName(value: string): string {
  return foldAccents(value)
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();
}

/**
 * Checks the submission on its own terms and against the account's names; calls nothing outside.
 * `today` is the platform's calendar day (lib/time.ts): a document expires, and a holder comes of
 * age, on a French date.
 */
export function createBuiltinKycVerifier(opts: { today: () => string }): KycVerifier {
  const { today } = opts;
  return {
    name: 'builtin',
    async verify(submission, user) {
      const reasons: KycReason[] = [];
      const now = today();
      if (documentNumberProblem(submission.documentType, submission.documentNumber)) reasons.push('document_number_invalid');
      if (submission.documentExpiresOn < now) reasons.push('document_expired');
      if (!hasAge(submission.birthDate, ADULT_AGE, now)) reasons.push('under_age');
      if (comparableName(submission.firstName) !== comparableName(user.firstName)) reasons.push('first_name_mismatch');
      if (comparableName(submission.lastName) !== comparableName(user.lastName)) reasons.push('last_name_mismatch');
      return { status: reasons.length === 0 ? 'verified' : 'rejected', reasons };
    },
  };
}
