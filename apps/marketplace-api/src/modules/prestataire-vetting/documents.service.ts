import { withTransaction } from '@repo/db';
import { AppError } from '@repo/http';
import type { DbTx } from '../../db/index.js';
import type { Document } from '../../db/schema/index.js';
import { newStorageKey, type Storage } from '../../integrations/storage/storage.js';
import type { Actor } from '../../lib/context.js';
import type { Clock } from '../../lib/time.js';
import { transitionMany } from '../../lib/transitions.js';
import type { UploadedFile } from '../../lib/uploads.js';
import { type ActivityRecorder, userSubject } from '../activity-log/index.js';
import type { Outbox } from '../outbox/index.js';
import { userRecords } from '../user-store/index.js';
import { findPrestataire, validationMachine } from './admin-review.repository.js';
import * as repo from './documents.repository.js';
import { MAX_DOCUMENTS_PER_USER, requiredChecklist, type DocumentFields } from './documents.schemas.js';

export interface DocumentUpload {
  fields: DocumentFields;
  file: UploadedFile;
}

/** What the activity log keeps of a document (never its storage key). */
export function auditDocument(doc: Document): Record<string, unknown> {
  return {
    document_id: doc.id,
    user_id: doc.userId,
    type: doc.type,
    original_name: doc.originalName,
    mime_type: doc.mimeType,
    size_bytes: doc.sizeBytes,
    expires_on: doc.expiresOn,
  };
}

/**
 * Compliance documents: a prestataire's own uploads, files an admin puts on any account, and the
 * admin's downloads. Files are stored under `private/`, which the public media route never serves.
 */
export function createDocumentsService(deps: { db: DbTx; storage: Storage; clock: Clock; recorder: ActivityRecorder; outbox: Outbox }) {
  const { db, storage, clock, recorder, outbox } = deps;

  /**
   * Writes the file, then its row (and, for a prestataire asked for documents, its return to the
   * validation queue) in one transaction; the file is removed again when the transaction fails.
   */
  /** 422 for an expiry the platform's calendar has passed; answers that calendar day. */
  function checkExpiry(upload: DocumentUpload): string {
    const today = clock.today();
    const expiresOn = upload.fields.expires_on;
    if (expiresOn !== undefined && expiresOn < today) throw AppError.validation({ expires_on: ['Must not be in the past'] });
    return today;
  }

  async function store(actor: Actor, userId: number, upload: DocumentUpload, today: string, log: (tx: DbTx, doc: Document) => Promise<void>) {
    if ((await repo.countUserDocuments(db, userId)) >= MAX_DOCUMENTS_PER_USER) {
      throw new AppError('conflict', `An account holds at most ${MAX_DOCUMENTS_PER_USER} documents; delete outdated ones first`);
    }
    const key = newStorageKey('private/documents', upload.file.extension);
    await storage.put(key, upload.file.buffer);
    try {
      const doc = await withTransaction(db, async (tx) => {
        const doc = await repo.insertDocument(tx, {
          userId,
          type: upload.fields.type,
          storageKey: key,
          originalName: upload.file.filename,
          mimeType: upload.file.mimeType,
          sizeBytes: upload.file.buffer.length,
          expiresOn: upload.fields.expires_on ?? null,
          uploadedBy: actor.userId,
        });
        await log(tx, doc);
        // Documents arriving for a prestataire who was asked for them put it back in the queue; a
        // prestataire in any other state, or an account that is none, stays as it is.
        await transitionMany(tx, { recorder, outbox, actor }, validationMachine, [userId], {
          from: ['documents_requested'],
          to: 'pending',
          action: 'prestataire.documents_submitted',
          details: { document_id: doc.id, type: doc.type },
        });
        return doc;
      });
      return { doc, today };
    } catch (error) {
      await storage.remove(key);
      throw error;
    }
  }

  return {
    /** The signed-in prestataire's documents, checklist and validation status. */
    async overview(actor: Actor) {
      const userId = actor.userId;
      const found = await findPrestataire(db, userId);
      if (!found) throw AppError.notFound('Prestataire profile');
      const docs = await repo.listUserDocuments(db, userId);
      const today = clock.today();
      return { docs, today, ...requiredChecklist(docs, today), profile: found.profile };
    },

    /** A prestataire files one of its own documents. */
    async uploadOwn(actor: Actor, upload: DocumentUpload) {
      const userId = actor.userId;
      const today = checkExpiry(upload);
      if (!(await findPrestataire(db, userId))) throw AppError.notFound('Prestataire profile');
      return store(actor, userId, upload, today, async () => {});
    },

    /**
     * A prestataire deletes one of its documents. Someone else's is not found; one an admin filed
     * on the account is part of the platform's records and stays.
     */
    async removeOwn(actor: Actor, documentId: number) {
      const userId = actor.userId;
      const doc = await withTransaction(db, async (tx) => {
        const existing = await repo.findUserDocument(tx, userId, documentId);
        if (!existing) throw AppError.notFound('Document');
        if (existing.uploadedBy !== null && existing.uploadedBy !== userId) {
          throw new AppError('conflict', 'This document was filed by an administrator and cannot be deleted');
        }
        const deleted = await repo.deleteUserDocument(tx, userId, documentId);
        if (!deleted) throw AppError.notFound('Document');
        // The row goes; the log keeps what was on file, for compliance reviews.
        await recorder.record(actor, 'document.deleted', userSubject(userId), { before: auditDocument(deleted) }, tx);
        return deleted;
      });
      await storage.remove(doc.storageKey);
    },

    /** An admin files a document on any live account. */
    async fileOnUser(actor: Actor, userId: number, upload: DocumentUpload) {
      const today = checkExpiry(upload);
      const user = await userRecords.findUserById(db, userId);
      if (!user || user.deletedAt) throw AppError.notFound('User');
      return store(actor, userId, upload, today, (tx, doc) =>
        recorder.record(actor, 'user.document_added', userSubject(userId), { after: auditDocument(doc) }, tx),
      );
    },

    /** A user's documents (admin views). */
    listFor: (userId: number) => repo.listUserDocuments(db, userId),

    /** The document and its bytes for an admin; a row whose file is gone is not found either. */
    async openForDownload(actor: Actor, documentId: number) {
      const doc = await repo.findDocument(db, documentId);
      if (!doc) throw AppError.notFound('Document');
      const file = await storage.open(doc.storageKey);
      if (!file) throw AppError.notFound('Document file');
      try {
        // Identity papers are personal data: who read them is kept.
        await recorder.record(actor, 'document.downloaded', userSubject(doc.userId), { after: { document_id: doc.id, type: doc.type } });
      } catch (error) {
        file.stream.destroy();
        throw error;
      }
      return { doc, file };
    },
  };
}

export type DocumentsService = ReturnType<typeof createDocumentsService>;
