import { storableText, UNSTORABLE_TEXT_MESSAGE, timestamp } from '@repo/schemas';
import { z } from 'zod';
import { KYC_STATUSES } from '../../db/schema/index.js';
import { DOCUMENT_TYPES, documentNumberProblem, normaliseDocumentNumber } from '../../integrations/kyc/kyc.js';
import { isCountryCode } from '../../integrations/kyc/countries.js';
import { isCalendarDate } from '../../lib/time.js';
import { UserResponse } from '../user-store/index.js';

const name = z
  .string()
  .trim()
  .min(1)
  .max(100)
  .refine(storableText, UNSTORABLE_TEXT_MESSAGE)
  .refine((v) => /\p{L}/u.test(v), { message: 'Must contain letters' });

const calendarDate = z.string().trim().refine(isCalendarDate, { message: 'Must be a real date written YYYY-MM-DD' });

export const KycBody = z
  .object({
    first_name: name,
    last_name: name,
    // Not in the future and of age: checked by the service against the platform's calendar day.
    birth_date: calendarDate.refine((d) => d >= '1900-01-01', { message: 'Must be a plausible birth date' }),
    document_type: z.enum(DOCUMENT_TYPES),
    document_number: z.string().max(40).transform(normaliseDocumentNumber),
    document_expires_on: calendarDate,
    nationality: z
      .string()
      .trim()
      .toUpperCase()
      .refine(isCountryCode, {
        message: 'Must be an ISO 3166-1 alpha-2 country code (e.g. FR)',
      })
      .nullish(),
  })
  .superRefine((body, ctx) => {
    const problem = documentNumberProblem(body.document_type, body.document_number);
    if (problem) ctx.addIssue({ code: 'custom', path: ['document_number'], message: problem });
  });
export type KycBody = z.infer<typeof KycBody>;

export const KycResultResponse = z.object({
  status: z.enum(KYC_STATUSES),
  reasons: z.array(z.string()).describe('Why the check was rejected: document_expired, first_name_mismatch, last_name_mismatch, …'),
  checked_at: timestamp,
  user: UserResponse,
});
