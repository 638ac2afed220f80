import { AppError, type FastifyPluginAsyncZod } from '@repo/http';
import { envelope, errorResponses, messageEnvelope } from '@repo/schemas';
import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import { actorOf } from '../../lib/context.js';
import { DOCUMENT_TYPES as DOCUMENT_FILE_TYPES, parseFields, readMultipart } from '../../lib/uploads.js';
import type { DocumentsService, DocumentUpload } from './documents.service.js';
import {
  attachmentDisposition,
  DocumentFields,
  DocumentParams,
  DocumentResponse,
  DocumentsOverviewResponse,
  presentDocument,
  UserParams,
} from './documents.schemas.js';

const UPLOAD_DESCRIPTION =
  'multipart/form-data with a `type` field (business_registration, insurance, identity or other), an optional ' +
  '`expires_on` field (YYYY-MM-DD, today or later) and one `file` part: a PDF, JPEG, PNG or WebP file, recognised by its content.';

/** Reads a document upload: one file in the `file` part and its fields; every problem in one 422. */
async function readDocumentUpload(request: FastifyRequest): Promise<DocumentUpload> {
  const { files, fields } = await readMultipart(request, {
    accept: DOCUMENT_FILE_TYPES,
    maxFiles: 1,
    acceptLabel: 'a PDF, JPEG, PNG or WebP file',
  });
  const file = files.find((f) => f.field === 'file');
  const missingFile = { file: ['A file is required in the `file` part'] };
  let parsed: DocumentFields;
  try {
    parsed = parseFields(DocumentFields, fields);
  } catch (error) {
    if (!file && error instanceof AppError && error.errors) throw AppError.validation({ ...error.errors, ...missingFile });
    throw error;
  }
  if (!file) throw AppError.validation(missingFile);
  return { fields: parsed, file };
}

export function documentsRoutes(deps: { documents: DocumentsService }): FastifyPluginAsyncZod {
  return async (app) => {
    const prestataireOnly = app.auth.requireRole('prestataire');
    const adminOnly = app.auth.requireRole('admin');
    const security = [{ bearerAuth: [] }];

    app.get(
      '/prestataire/documents',
      {
        onRequest: prestataireOnly,
        schema: {
          operationId: 'listPrestataireDocuments',
          tags: ['prestataire'],
          summary: 'Your documents, the required-documents checklist and your validation status',
          security,
          response: { 200: envelope(DocumentsOverviewResponse), ...errorResponses(401, 403, 404, 429) },
        },
      },
      async (request) => {
        const o = await deps.documents.overview(actorOf(request));
        return {
          data: {
            documents: o.docs.map((d) => presentDocument(d, o.today)),
            required: o.required,
            complete: o.complete,
            validation_status: o.profile.validationStatus,
            validation_note: o.profile.validationNote,
          },
        };
      },
    );

    app.post(
      '/prestataire/documents',
      {
        onRequest: prestataireOnly,
        schema: {
          operationId: 'uploadPrestataireDocument',
          tags: ['prestataire'],
          summary: 'Upload a document (a requested one puts your application back in the validation queue)',
          description: UPLOAD_DESCRIPTION,
          consumes: ['multipart/form-data'],
          security,
          response: { 201: envelope(DocumentResponse), ...errorResponses(400, 401, 403, 404, 409, 413, 422, 429) },
        },
      },
      async (request, reply) => {
        const upload = await readDocumentUpload(request);
        const { doc, today } = await deps.documents.uploadOwn(actorOf(request), upload);
        return reply.status(201).send({ data: presentDocument(doc, today), message: 'Document uploaded' });
      },
    );

    app.delete(
      '/prestataire/documents/:document',
      {
        onRequest: prestataireOnly,
        schema: {
          operationId: 'deletePrestataireDocument',
          tags: ['prestataire'],
          summary: 'Delete one of your documents (not one an administrator filed)',
          security,
          params: DocumentParams,
          response: { 200: messageEnvelope, ...errorResponses(401, 403, 404, 409, 422, 429) },
        },
      },
      async (request) => {
        await deps.documents.removeOwn(actorOf(request), request.params.document);
        return { message: 'Document deleted' };
      },
    );

    app.get(
      '/admin/documents/:document/download',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminDownloadDocument',
          tags: ['admin'],
          summary: 'Download a document (the access is recorded in the activity log)',
          security,
          params: DocumentParams,
          response: { 200: z.any().describe('The file, as an attachment'), ...errorResponses(401, 403, 404, 422, 429) },
        },
      },
      async (request, reply) => {
        const { doc, file } = await deps.documents.openForDownload(actorOf(request), request.params.document);
        return reply
          .header('content-type', doc.mimeType)
          .header('content-length', String(file.size))
          .header('content-disposition', attachmentDisposition(doc.originalName))
          .header('x-content-type-options', 'nosniff')
          .header('cache-control', 'private, no-store')
          .send(file.stream);
      },
    );

    app.post(
      '/admin/users/:user/documents',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminUploadUserDocument',
          tags: ['admin'],
          summary: "File a document on a user's account",
          description: UPLOAD_DESCRIPTION,
          consumes: ['multipart/form-data'],
          security,
          params: UserParams,
          response: { 201: envelope(DocumentResponse), ...errorResponses(400, 401, 403, 404, 409, 413, 422, 429) },
        },
      },
      async (request, reply) => {
        const upload = await readDocumentUpload(request);
        const { doc, today } = await deps.documents.fileOnUser(actorOf(request), request.params.user, upload);
        return reply.status(201).send({ data: presentDocument(doc, today), message: 'Document filed' });
      },
    );
  };
}
