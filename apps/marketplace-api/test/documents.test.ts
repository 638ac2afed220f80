import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { and, eq } from 'drizzle-orm';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activityLog, documents, prestataireProfiles, users } from '../src/db/schema/index.js';
import { addDays, todayIn } from '../src/lib/time.js';
import { attachmentDisposition } from '../src/modules/prestataire-vetting/documents.schemas.js';
import { eventsOf } from '../src/modules/outbox/outbox.repository.js';
import { bearer, buildTestApp, createAdmin, createClient, createPrestataire, expectError, type TestApp } from './helpers.js';

let t: TestApp;

/** The platform's calendar day, as the app counts expiry. */
const platformToday = () => todayIn(t.config.platformTimeZone);
let storageDir: string;

beforeAll(async () => {
  storageDir = await mkdtemp(join(tmpdir(), 'documents-test-'));
  // A small upload limit, so that "too large" needs only a few kilobytes.
  t = await buildTestApp({
    STORAGE_DIR: storageDir,
    UPLOAD_MAX_BYTES: '4096',
    RATE_LIMIT_PUBLIC: '100000',
    RATE_LIMIT_AUTHENTICATED: '100000',
  });
});
afterAll(async () => {
  await t.close();
  await rm(storageDir, { recursive: true, force: true });
});

/** A minimal valid PDF document (one empty page). */
const PDF = Buffer.from(
  '%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n2 0 obj\n<< /Type /Pages /Kids [3 0 R] /Count 1 >>\nendobj\n' +
    '3 0 obj\n<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n',
);
const PNG_1X1 = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');

interface Part {
  name: string;
  filename?: string;
  type?: string;
  data: Buffer | string;
}

/** A multipart/form-data body with the given parts. */
function multipart(parts: Part[]) {
  const boundary = `----vitest${randomBytes(8).toString('hex')}`;
  const chunks: Buffer[] = [];
  for (const part of parts) {
    const disposition = `form-data; name="${part.name}"${part.filename ? `; filename="${part.filename}"` : ''}`;
    const head = `--${boundary}\r\nContent-Disposition: ${disposition}\r\n${part.type ? `Content-Type: ${part.type}\r\n` : ''}\r\n`;
    chunks.push(Buffer.from(head), Buffer.isBuffer(part.data) ? part.data : Buffer.from(part.data), Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { payload: Buffer.concat(chunks), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

function upload(url: string, token: string | undefined, parts: Part[]) {
  const body = multipart(parts);
  return t.app.inject({ method: 'POST', url: `/api/v1${url}`, headers: { ...body.headers, ...(token ? bearer(token) : {}) }, payload: body.payload });
}

const pdfParts = (fields: Record<string, string>, file: Partial<Part> = {}): Part[] => [
  ...Object.entries(fields).map(([name, data]) => ({ name, data })),
  { name: 'file', filename: 'attestation.pdf', type: 'application/pdf', data: PDF, ...file },
];

const api = (method: 'GET' | 'DELETE', url: string, token?: string) =>
  t.app.inject({ method, url: `/api/v1${url}`, headers: token ? bearer(token) : {} });

function fieldErrors(res: LightMyRequestResponse) {
  return expectError(res, 422, 'validation_error').errors ?? {};
}

async function documentRow(id: number) {
  const [row] = await t.database.db.select().from(documents).where(eq(documents.id, id));
  return row;
}

async function activity(subjectId: number, action: string) {
  return t.database.db
    .select()
    .from(activityLog)
    .where(and(eq(activityLog.subjectId, subjectId), eq(activityLog.action, action)))
    .orderBy(activityLog.id);
}

describe('GET /prestataire/documents', () => {
  it('answers an empty list, the unmet checklist and the validation status', async () => {
    const p = await createPrestataire(t);
    const res = await api('GET', '/prestataire/documents', p.token);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data).toEqual({
      documents: [],
      required: [
        { type: 'business_registration', provided: false, valid: false, expires_on: null },
        { type: 'insurance', provided: false, valid: false, expires_on: null },
        { type: 'identity', provided: false, valid: false, expires_on: null },
      ],
      complete: false,
      validation_status: 'pending',
      validation_note: null,
    });
  });

  it('marks expired documents and counts only unexpired ones as valid', async () => {
    const p = await createPrestataire(t, { status: 'validated' });
    const today = platformToday();
    const base = { userId: p.user.id, storageKey: 'private/documents/x/y.pdf', mimeType: 'application/pdf', sizeBytes: 10, uploadedBy: p.user.id };
    await t.database.db.insert(documents).values([
      { ...base, type: 'insurance', originalName: 'old.pdf', expiresOn: addDays(today, -1) },
      { ...base, type: 'identity', originalName: 'id.pdf', expiresOn: today },
      { ...base, type: 'business_registration', originalName: 'kbis.pdf', expiresOn: null },
    ]);
    const { data } = (await api('GET', '/prestataire/documents', p.token)).json();
    const byName = Object.fromEntries(data.documents.map((d: { original_name: string }) => [d.original_name, d]));
    expect(byName['old.pdf']).toMatchObject({ expired: true, expires_on: addDays(today, -1) });
    expect(byName['id.pdf']).toMatchObject({ expired: false, expires_on: today });
    expect(byName['kbis.pdf']).toMatchObject({ expired: false, expires_on: null });
    expect(data.required).toEqual([
      { type: 'business_registration', provided: true, valid: true, expires_on: null },
      { type: 'insurance', provided: true, valid: false, expires_on: null },
      { type: 'identity', provided: true, valid: true, expires_on: today },
    ]);
    expect(data.complete).toBe(false);
  });

  it('answers 401 without a token or for a suspended account, 403 to clients and admins', async () => {
    expectError(await api('GET', '/prestataire/documents'), 401, 'unauthenticated');
    const suspended = await createPrestataire(t);
    await t.database.db.update(users).set({ status: 'suspended' }).where(eq(users.id, suspended.user.id));
    expectError(await api('GET', '/prestataire/documents', suspended.token), 401, 'unauthenticated');
    expectError(await api('GET', '/prestataire/documents', (await createClient(t)).token), 403, 'forbidden');
    expectError(await api('GET', '/prestataire/documents', (await createAdmin(t)).token), 403, 'forbidden');
  });
});

describe('POST /prestataire/documents', () => {
  it('stores a PDF privately and answers 201 with the document', async () => {
    const p = await createPrestataire(t);
    const expiresOn = addDays(platformToday(), 200);
    const res = await upload('/prestataire/documents', p.token, pdfParts({ type: 'insurance', expires_on: expiresOn }));
    expect(res.statusCode, res.body).toBe(201);
    const doc = res.json().data;
    expect(doc).toEqual({
      id: expect.any(Number),
      type: 'insurance',
      original_name: 'attestation.pdf',
      mime_type: 'application/pdf',
      size_bytes: PDF.length,
      expires_on: expiresOn,
      expired: false,
      uploaded_by_admin: false,
      created_at: expect.any(String),
    });
    expect(res.body).not.toMatch(/private\//);
    const row = (await documentRow(doc.id))!;
    expect(row).toMatchObject({ userId: p.user.id, uploadedBy: p.user.id });
    expect(row.storageKey).toMatch(/^private\/documents\/\d{4}\/\d{2}\/[0-9a-f-]+\.pdf$/);
    expect(existsSync(join(storageDir, row.storageKey))).toBe(true);
    // Never served by the public media route.
    expectError(await api('GET', `/media/${row.storageKey}`), 404, 'not_found');

    const list = (await api('GET', '/prestataire/documents', p.token)).json().data;
    expect(list.documents.map((d: { id: number }) => d.id)).toEqual([doc.id]);
    expect(list.required[1]).toEqual({ type: 'insurance', provided: true, valid: true, expires_on: expiresOn });
    // A plain upload does not move a pending application.
    expect(list.validation_status).toBe('pending');
  });

  it('accepts a PNG photo of a paper, without expiry (an empty expires_on is no expiry)', async () => {
    const p = await createPrestataire(t);
    const res = await upload('/prestataire/documents', p.token, [
      { name: 'type', data: 'identity' },
      { name: 'expires_on', data: '' },
      { name: 'file', filename: 'carte.png', type: 'image/png', data: PNG_1X1 },
    ]);
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().data).toMatchObject({ type: 'identity', mime_type: 'image/png', expires_on: null, original_name: 'carte.png' });
  });

  it('trusts the bytes, not the name or the declared type', async () => {
    const p = await createPrestataire(t);
    const res = await upload('/prestataire/documents', p.token, pdfParts({ type: 'insurance' }, { filename: 'scan.png', type: 'image/png' }));
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().data.mime_type).toBe('application/pdf');

    const fake = await upload('/prestataire/documents', p.token, pdfParts({ type: 'insurance' }, { data: 'just some text, not a PDF' }));
    expect(fieldErrors(fake)).toEqual({ file: [expect.stringMatching(/PDF/)] });
    const gif = await upload('/prestataire/documents', p.token, pdfParts({ type: 'insurance' }, { data: Buffer.from('GIF89a\x01\x00\x01\x00\x00\x00\x00;', 'latin1') }));
    expect(Object.keys(fieldErrors(gif))).toEqual(['file']);
  });

  it('answers 422 for a missing or unknown type, a missing file, a past or impossible expiry', async () => {
    const p = await createPrestataire(t);
    expect(Object.keys(fieldErrors(await upload('/prestataire/documents', p.token, pdfParts({ type: 'passport' }))))).toEqual(['type']);
    expect(Object.keys(fieldErrors(await upload('/prestataire/documents', p.token, pdfParts({}))))).toEqual(['type']);
    const nothing = fieldErrors(await upload('/prestataire/documents', p.token, [{ name: 'note', data: 'x' }]));
    expect(Object.keys(nothing).sort()).toEqual(['file', 'type']);
    expect(Object.keys(fieldErrors(await upload('/prestataire/documents', p.token, [{ name: 'type', data: 'insurance' }])))).toEqual(['file']);
    const past = fieldErrors(await upload('/prestataire/documents', p.token, pdfParts({ type: 'insurance', expires_on: addDays(platformToday(), -1) })));
    expect(past).toEqual({ expires_on: ['Must not be in the past'] });
    for (const bad of ['2030-02-31', '31/12/2030', 'tomorrow']) {
      expect(Object.keys(fieldErrors(await upload('/prestataire/documents', p.token, pdfParts({ type: 'insurance', expires_on: bad })))), bad).toEqual([
        'expires_on',
      ]);
    }
    const two = await upload('/prestataire/documents', p.token, [
      { name: 'type', data: 'insurance' },
      { name: 'file', filename: 'a.pdf', data: PDF },
      { name: 'file', filename: 'b.pdf', data: PDF },
    ]);
    expect(Object.keys(fieldErrors(two))).toEqual(['file']);
    const rows = await t.database.db.select().from(documents).where(eq(documents.userId, p.user.id));
    expect(rows).toEqual([]);
  });

  it('answers 413 beyond UPLOAD_MAX_BYTES and 400 to a body that is not multipart', async () => {
    const p = await createPrestataire(t);
    const big = Buffer.concat([PDF, Buffer.alloc(8192, 32)]);
    expectError(await upload('/prestataire/documents', p.token, pdfParts({ type: 'insurance' }, { data: big })), 413, 'payload_too_large');
    const json = await t.app.inject({ method: 'POST', url: '/api/v1/prestataire/documents', headers: bearer(p.token), payload: { type: 'insurance' } });
    expectError(json, 400, 'bad_request');
    const rows = await t.database.db.select().from(documents).where(eq(documents.userId, p.user.id));
    expect(rows).toEqual([]);
  });

  it('puts a prestataire asked for documents back in the validation queue, and logs it', async () => {
    const p = await createPrestataire(t, { status: 'documents_requested' });
    const res = await upload('/prestataire/documents', p.token, pdfParts({ type: 'insurance' }));
    expect(res.statusCode, res.body).toBe(201);
    const [profile] = await t.database.db.select().from(prestataireProfiles).where(eq(prestataireProfiles.userId, p.user.id));
    expect(profile!.validationStatus).toBe('pending');
    const entries = await activity(p.user.id, 'prestataire.documents_submitted');
    expect(entries).toEqual([
      expect.objectContaining({
        actorId: p.user.id,
        subjectType: 'user',
        before: { validation_status: 'documents_requested', validation_note: null },
        after: { validation_status: 'pending', validation_note: null, document_id: res.json().data.id, type: 'insurance' },
      }),
    ]);
    // Published, as every move of the validation is.
    const events = (await eventsOf(t.database.db, 'user', p.user.id)).filter((e) => e.type.startsWith('prestataire.'));
    expect(events).toEqual([
      expect.objectContaining({
        type: 'prestataire.documents_submitted',
        actorId: p.user.id,
        payload: expect.objectContaining({ from: 'documents_requested', to: 'pending', document_id: res.json().data.id, type: 'insurance' }),
      }),
    ]);
    // A second upload changes nothing more.
    expect((await upload('/prestataire/documents', p.token, pdfParts({ type: 'identity' }))).statusCode).toBe(201);
    expect(await activity(p.user.id, 'prestataire.documents_submitted')).toHaveLength(1);
    expect((await eventsOf(t.database.db, 'user', p.user.id)).filter((e) => e.type === 'prestataire.documents_submitted')).toHaveLength(1);
  });

  it('leaves validated, rejected and suspended prestataires where they are', async () => {
    for (const status of ['validated', 'rejected', 'suspended'] as const) {
      const p = await createPrestataire(t, { status });
      expect((await upload('/prestataire/documents', p.token, pdfParts({ type: 'insurance' }))).statusCode).toBe(201);
      const { data } = (await api('GET', '/prestataire/documents', p.token)).json();
      expect(data.validation_status).toBe(status);
    }
  });

  it('answers 401 without a token and 403 to clients and admins', async () => {
    expectError(await upload('/prestataire/documents', undefined, pdfParts({ type: 'insurance' })), 401, 'unauthenticated');
    expectError(await upload('/prestataire/documents', (await createClient(t)).token, pdfParts({ type: 'insurance' })), 403, 'forbidden');
    expectError(await upload('/prestataire/documents', (await createAdmin(t)).token, pdfParts({ type: 'insurance' })), 403, 'forbidden');
  });
});

describe('DELETE /prestataire/documents/{document}', () => {
  it('removes the row and the file, and logs what was on file', async () => {
    const p = await createPrestataire(t);
    const doc = (await upload('/prestataire/documents', p.token, pdfParts({ type: 'insurance' }))).json().data;
    const row = (await documentRow(doc.id))!;
    const res = await api('DELETE', `/prestataire/documents/${doc.id}`, p.token);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ message: 'Document deleted' });
    expect(await documentRow(doc.id)).toBeUndefined();
    expect(existsSync(join(storageDir, row.storageKey))).toBe(false);
    const [entry] = await activity(p.user.id, 'document.deleted');
    expect(entry!.before).toMatchObject({ document_id: doc.id, type: 'insurance', original_name: 'attestation.pdf' });
    expectError(await api('DELETE', `/prestataire/documents/${doc.id}`, p.token), 404, 'not_found');
  });

  it("answers 404 for another prestataire's document and leaves it", async () => {
    const owner = await createPrestataire(t);
    const other = await createPrestataire(t);
    const doc = (await upload('/prestataire/documents', owner.token, pdfParts({ type: 'insurance' }))).json().data;
    expectError(await api('DELETE', `/prestataire/documents/${doc.id}`, other.token), 404, 'not_found');
    expect(await documentRow(doc.id)).toBeDefined();
  });

  it('answers 409 for a document an admin filed on the account', async () => {
    const p = await createPrestataire(t);
    const admin = await createAdmin(t);
    const doc = (await upload(`/admin/users/${p.user.id}/documents`, admin.token, pdfParts({ type: 'other' }))).json().data;
    expectError(await api('DELETE', `/prestataire/documents/${doc.id}`, p.token), 409, 'conflict');
    expect(await documentRow(doc.id)).toBeDefined();
  });

  it('answers 422 for a malformed id, 401 without a token, 403 to a client', async () => {
    const p = await createPrestataire(t);
    expectError(await api('DELETE', '/prestataire/documents/abc', p.token), 422, 'validation_error');
    expectError(await api('DELETE', '/prestataire/documents/1'), 401, 'unauthenticated');
    expectError(await api('DELETE', '/prestataire/documents/1', (await createClient(t)).token), 403, 'forbidden');
  });
});

describe('GET /admin/documents/{document}/download', () => {
  it('streams the exact bytes as an attachment, with an RFC 5987 file name, and logs the access', async () => {
    const p = await createPrestataire(t);
    const admin = await createAdmin(t);
    const name = "Attestation d’assurance 2026 l'été (1).pdf";
    const doc = (await upload('/prestataire/documents', p.token, pdfParts({ type: 'insurance' }, { filename: name }))).json().data;
    expect(doc.original_name).toBe(name);

    const res = await api('GET', `/admin/documents/${doc.id}/download`, admin.token);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.rawPayload.equals(PDF)).toBe(true);
    expect(res.headers['content-type']).toBe('application/pdf');
    expect(res.headers['content-length']).toBe(String(PDF.length));
    expect(res.headers['content-disposition']).toBe(
      'attachment; filename="Attestation d_assurance 2026 l\'_t_ (1).pdf"; ' +
        "filename*=UTF-8''Attestation%20d%E2%80%99assurance%202026%20l%27%C3%A9t%C3%A9%20%281%29.pdf",
    );
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['cache-control']).toBe('private, no-store');
    const head = await t.app.inject({ method: 'HEAD', url: `/api/v1/admin/documents/${doc.id}/download`, headers: bearer(admin.token) });
    expect(head.statusCode).toBe(200);
    expect(head.headers['content-disposition']).toBe(res.headers['content-disposition']);
    const [entry] = await activity(p.user.id, 'document.downloaded');
    expect(entry).toMatchObject({ actorId: admin.user.id, after: { document_id: doc.id, type: 'insurance' } });
  });

  it('answers 404 for an unknown document and for a document whose file is gone', async () => {
    const admin = await createAdmin(t);
    expectError(await api('GET', '/admin/documents/999999/download', admin.token), 404, 'not_found');
    const p = await createPrestataire(t);
    const [row] = await t.database.db
      .insert(documents)
      .values({ userId: p.user.id, type: 'insurance', storageKey: 'private/documents/2020/01/missing.pdf', originalName: 'gone.pdf', mimeType: 'application/pdf', sizeBytes: 3 })
      .returning();
    expectError(await api('GET', `/admin/documents/${row!.id}/download`, admin.token), 404, 'not_found');
  });

  it('answers 401 without a token and 403 to the prestataire itself and to clients', async () => {
    const p = await createPrestataire(t);
    const doc = (await upload('/prestataire/documents', p.token, pdfParts({ type: 'insurance' }))).json().data;
    expectError(await api('GET', `/admin/documents/${doc.id}/download`), 401, 'unauthenticated');
    expectError(await api('GET', `/admin/documents/${doc.id}/download`, p.token), 403, 'forbidden');
    expectError(await api('GET', `/admin/documents/${doc.id}/download`, (await createClient(t)).token), 403, 'forbidden');
  });
});

describe('attachmentDisposition', () => {
  it('keeps quotes, backslashes and line breaks of a name out of the header syntax', () => {
    expect(attachmentDisposition('a"b\\c\r\nd%.pdf')).toBe(`attachment; filename="a_b_c__d_.pdf"; filename*=UTF-8''a%22b%5Cc%0D%0Ad%25.pdf`);
  });
});

describe('POST /admin/users/{user}/documents', () => {
  it('files a document on any user, uploaded by the admin, and logs user.document_added', async () => {
    const admin = await createAdmin(t);
    const client = await createClient(t);
    const res = await upload(`/admin/users/${client.user.id}/documents`, admin.token, pdfParts({ type: 'identity' }, { filename: 'cni.pdf' }));
    expect(res.statusCode, res.body).toBe(201);
    const doc = res.json().data;
    expect(doc).toMatchObject({ type: 'identity', original_name: 'cni.pdf', uploaded_by_admin: true });
    expect(await documentRow(doc.id)).toMatchObject({ userId: client.user.id, uploadedBy: admin.user.id });
    const [entry] = await activity(client.user.id, 'user.document_added');
    expect(entry).toMatchObject({ actorId: admin.user.id, actorRole: 'admin', subjectType: 'user', before: null });
    expect(entry!.after).toMatchObject({ document_id: doc.id, type: 'identity', original_name: 'cni.pdf' });
    const download = await api('GET', `/admin/documents/${doc.id}/download`, admin.token);
    expect(download.rawPayload.equals(PDF)).toBe(true);
  });

  it('shows admin-filed documents to the prestataire and counts them in its checklist', async () => {
    const admin = await createAdmin(t);
    const p = await createPrestataire(t, { status: 'documents_requested' });
    expect((await upload(`/admin/users/${p.user.id}/documents`, admin.token, pdfParts({ type: 'business_registration' }))).statusCode).toBe(201);
    const { data } = (await api('GET', '/prestataire/documents', p.token)).json();
    expect(data.documents).toEqual([expect.objectContaining({ type: 'business_registration', uploaded_by_admin: true })]);
    expect(data.required[0]).toMatchObject({ type: 'business_registration', provided: true, valid: true });
    // Documents the prestataire sent by other means still put it back in the queue.
    expect(data.validation_status).toBe('pending');
  });

  it('answers 404 for an unknown or deleted user, 422 for bad fields', async () => {
    const admin = await createAdmin(t);
    expectError(await upload('/admin/users/999999/documents', admin.token, pdfParts({ type: 'identity' })), 404, 'not_found');
    const gone = await createClient(t);
    await t.database.db.update(users).set({ deletedAt: new Date() }).where(eq(users.id, gone.user.id));
    expectError(await upload(`/admin/users/${gone.user.id}/documents`, admin.token, pdfParts({ type: 'identity' })), 404, 'not_found');
    const client = await createClient(t);
    expect(Object.keys(fieldErrors(await upload(`/admin/users/${client.user.id}/documents`, admin.token, pdfParts({ type: 'kbis' }))))).toEqual(['type']);
  });

  it('answers 401 without a token and 403 to prestataires and clients', async () => {
    const client = await createClient(t);
    const url = `/admin/users/${client.user.id}/documents`;
    expectError(await upload(url, undefined, pdfParts({ type: 'identity' })), 401, 'unauthenticated');
    expectError(await upload(url, (await createPrestataire(t)).token, pdfParts({ type: 'identity' })), 403, 'forbidden');
    expectError(await upload(url, client.token, pdfParts({ type: 'identity' })), 403, 'forbidden');
  });
});
