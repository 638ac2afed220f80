import { AppError, type FieldErrors } from '@repo/http';
import { storableText, UNSTORABLE_TEXT_MESSAGE } from '@repo/schemas';
import type { FastifyRequest } from 'fastify';
import { fileTypeFromBuffer } from 'file-type';
import type { z } from 'zod';

/** Content types accepted for photos, by their sniffed signature (never the client's claim). */
export const IMAGE_TYPES: Record<string, string> = { 'image/jpeg': 'jpg', 'image/png': 'png', 'image/webp': 'webp' };
/** Documents: PDF or a photo of the paper. */
export const DOCUMENT_TYPES: Record<string, string> = { ...IMAGE_TYPES, 'application/pdf': 'pdf' };

export interface UploadedFile {
  field: string;
  filename: string;
  buffer: Buffer;
  mimeType: string;
  extension: string;
}

/**
 * Reads a multipart request: its files (each size-limited by the multipart plugin, 413 beyond) and
 * its text fields. A file whose bytes are not one of `accept` answers 422 on its field.
 */
export async function readMultipart(
  request: FastifyRequest,
  opts: { accept: Record<string, string>; maxFiles: number; acceptLabel: string },
): Promise<{ files: UploadedFile[]; fields: Record<string, string> }> {
  if (!request.isMultipart()) throw new AppError('bad_request', 'Send the file as multipart/form-data');
  const files: UploadedFile[] = [];
  const fields: Record<string, string> = {};
  try {
    for await (const part of request.parts()) {
      if (!storableText(part.fieldname)) throw AppError.validation({ [safeName(part.fieldname)]: [UNSTORABLE_TEXT_MESSAGE] });
      if (part.type === 'file') {
        if (files.length >= opts.maxFiles) {
          // Drain the stream so the request completes, then refuse.
          part.file.resume();
          throw AppError.validation({ [part.fieldname]: [`At most ${opts.maxFiles} file(s) per request`] });
        }
        const buffer = await part.toBuffer();
        const sniffed = buffer.length > 0 ? await fileTypeFromBuffer(buffer) : undefined;
        const extension = sniffed ? opts.accept[sniffed.mime] : undefined;
        if (!sniffed || !extension) throw AppError.validation({ [part.fieldname]: [`Must be ${opts.acceptLabel}`] });
        files.push({ field: part.fieldname, filename: safeFilename(part.filename, extension), buffer, mimeType: sniffed.mime, extension });
      } else if (typeof part.value === 'string') {
        if (!storableText(part.value)) throw AppError.validation({ [part.fieldname]: [UNSTORABLE_TEXT_MESSAGE] });
        fields[part.fieldname] = part.value;
      }
    }
  } catch (error) {
    throw multipartError(error);
  }
  return { files, fields };
}

/**
 * The multipart reader's errors in the envelope: its limits keep their statuses (413 for a file
 * too large, too many parts), and the parser's own failures — no boundary, a body cut short, a
 * malformed part header — are the client's: 400.
 */
function multipartError(error: unknown): unknown {
  if (error instanceof AppError) return error;
  const status = (error as { statusCode?: unknown }).statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) return error;
  const reason = error instanceof Error ? error.message.replace(/^Multipart:\s*/i, '') : 'unreadable';
  return new AppError('bad_request', `The multipart body is malformed: ${reason}`, { cause: error });
}

/** A name safe to show and store: no control characters, path separators or unpaired surrogates. */
function safeName(name: string): string {
  // eslint-disable-next-line no-control-regex
  return name.replace(/[\u0000-\u001f\u007f]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD');
}

/** The client's file name without any directory part or unsafe character, at most 255 characters. */
function safeFilename(filename: string, extension: string): string {
  const base = safeName(filename.split(/[\\/]/).pop() ?? '').replace(/^\.+/, '').trim().slice(0, 255);
  return base || `upload.${extension}`;
}

/** Validates the text fields of a multipart request with the same 422 shape as a JSON body. */
export function parseFields<S extends z.ZodType>(schema: S, fields: Record<string, string>): z.output<S> {
  const result = schema.safeParse(fields);
  if (result.success) return result.data;
  const errors: FieldErrors = {};
  for (const issue of result.error.issues) {
    const path = issue.path.join('.') || '_';
    (errors[path] ??= []).push(issue.message);
  }
  throw AppError.validation(errors);
}
