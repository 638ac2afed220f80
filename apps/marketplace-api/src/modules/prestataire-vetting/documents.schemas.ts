import { id, iso, timestamp } from '@repo/schemas';
import { z } from 'zod';
import { DOCUMENT_TYPES, VALIDATION_STATUSES, type Document, type DocumentType } from '../../db/schema/index.js';
import { isCalendarDate } from '../../lib/time.js';

/** What a prestataire must hold, unexpired, to be validated and to stay validated. */
export const REQUIRED_DOCUMENT_TYPES = ['business_registration', 'insurance', 'identity'] as const satisfies readonly DocumentType[];

/** Documents kept per account; beyond it old ones must be deleted first. */
export const MAX_DOCUMENTS_PER_USER = 50;

// The format check alone lets 2026-02-31 through.
const calendarDate = z.iso.date({ message: 'Must be a date in the form YYYY-MM-DD' }).refine(isCalendarDate, { message: 'Must be a real calendar date' });

/** The text fields of a document upload (multipart). */
export const DocumentFields = z.object({
  type: z.enum(DOCUMENT_TYPES, { message: `Must be one of: ${DOCUMENT_TYPES.join(', ')}` }),
  expires_on: z.preprocess(
    // Forms send an empty field for "no expiry".
    (value) => (value === '' ? undefined : value),
    // Not in the past: checked by the service against the platform's calendar day (a certificate
    // stays valid through its last day, a Paris date).
    calendarDate.optional(),
  ),
});
export type DocumentFields = z.infer<typeof DocumentFields>;

export const DocumentParams = z.object({ document: id });
export const UserParams = z.object({ user: id });

export const DocumentResponse = z.object({
  id: z.number().int(),
  type: z.enum(DOCUMENT_TYPES),
  original_name: z.string(),
  mime_type: z.string(),
  size_bytes: z.number().int(),
  expires_on: z.iso.date().nullable(),
  expired: z.boolean(),
  uploaded_by_admin: z.boolean(),
  created_at: timestamp,
});
export type DocumentResponse = z.infer<typeof DocumentResponse>;

/** One line of the required-documents checklist. */
export const RequiredDocumentResponse = z.object({
  type: z.enum(REQUIRED_DOCUMENT_TYPES),
  /** At least one document of this type is on file. */
  provided: z.boolean(),
  /** At least one of them has not expired. */
  valid: z.boolean(),
  /** The latest expiry among the unexpired ones; null when none expires (or none is valid). */
  expires_on: z.iso.date().nullable(),
});

export const DocumentsOverviewResponse = z.object({
  documents: z.array(DocumentResponse),
  required: z.array(RequiredDocumentResponse),
  /** Every required document is provided and unexpired. */
  complete: z.boolean(),
  validation_status: z.enum(VALIDATION_STATUSES),
  validation_note: z.string().nullable(),
});

/** `today`: the platform's calendar day (Clock.today), through which a document stays valid. */
export function presentDocument(doc: Document, today: string): DocumentResponse {
  return {
    id: doc.id,
    type: doc.type,
    original_name: doc.originalName,
    mime_type: doc.mimeType,
    size_bytes: doc.sizeBytes,
    expires_on: doc.expiresOn,
    expired: doc.expiresOn !== null && doc.expiresOn < today,
    uploaded_by_admin: doc.uploadedBy !== null && doc.uploadedBy !== doc.userId,
    created_at: iso(doc.createdAt),
  };
}

/** Which required documents are on file and unexpired. */
export function requiredChecklist(docs: Document[], today: string) {
  const required = REQUIRED_DOCUMENT_TYPES.map((type) => {
    const ofType = docs.filter((d) => d.type === type);
    const unexpired = ofType.filter((d) => d.expiresOn === null || d.expiresOn >= today);
    const noExpiry = unexpired.some((d) => d.expiresOn === null);
    const latest = unexpired.reduce<string | null>((max, d) => (d.expiresOn && (!max || d.expiresOn > max) ? d.expiresOn : max), null);
    return { type, provided: ofType.length > 0, valid: unexpired.length > 0, expires_on: noExpiry ? null : latest };
  });
  return { required, complete: required.every((r) => r.valid) };
}

/**
 * `Content-Disposition` for a download: an ASCII fallback for old clients and the exact name in
 * RFC 5987 encoding (`filename*=UTF-8''…`), so accents and spaces survive and no quote or line
 * break from a user's file name can reach the header.
 */
export function attachmentDisposition(name: string): string {
  const fallback = name.replace(/[^\x20-\x7e]|["\\%]/g, '_');
  const encoded = encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}
