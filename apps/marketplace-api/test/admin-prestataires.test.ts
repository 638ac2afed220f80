import { randomBytes } from 'node:crypto';
import { and, eq } from 'drizzle-orm';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activityLog, prestataireProfiles, users, type ValidationStatus } from '../src/db/schema/index.js';
import { bearer, buildTestApp, createAdmin, createClient, createPrestataire, expectError, type TestApp } from './helpers.js';
import { startSmtpSink } from './mail-sink.js';

let sink: Awaited<ReturnType<typeof startSmtpSink>>;
let t: TestApp;
let admin: Awaited<ReturnType<typeof createAdmin>>;

beforeAll(async () => {
  sink = await startSmtpSink();
  t = await buildTestApp({ SMTP_URL: sink.url, RATE_LIMIT_PUBLIC: '100000', RATE_LIMIT_AUTHENTICATED: '100000' });
  admin = await createAdmin(t);
});
afterAll(async () => {
  await t.close();
  await sink.close();
});

const PDF = Buffer.from(
  '%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n2 0 obj\n<< /Type /Pages /Kids [3 0 R] /Count 1 >>\nendobj\n' +
    '3 0 obj\n<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n',
);

type Json = Record<string, unknown> | undefined;
const api = (method: 'GET' | 'POST', url: string, token?: string, payload?: Json) =>
  t.app.inject({ method, url: `/api/v1${url}`, headers: token ? bearer(token) : {}, ...(payload === undefined ? {} : { payload }) });

function uploadPdf(token: string, type: string) {
  const boundary = `----vitest${randomBytes(8).toString('hex')}`;
  const payload = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="type"\r\n\r\n${type}\r\n`),
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${type}.pdf"\r\nContent-Type: application/pdf\r\n\r\n`),
    PDF,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  return t.app.inject({
    method: 'POST',
    url: '/api/v1/prestataire/documents',
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, ...bearer(token) },
    payload,
  });
}

function fieldErrors(res: LightMyRequestResponse) {
  return expectError(res, 422, 'validation_error').errors ?? {};
}

async function profileOf(userId: number) {
  const [row] = await t.database.db.select().from(prestataireProfiles).where(eq(prestataireProfiles.userId, userId));
  return row!;
}

async function activity(subjectId: number, action: string) {
  return t.database.db
    .select()
    .from(activityLog)
    .where(and(eq(activityLog.subjectId, subjectId), eq(activityLog.action, action)))
    .orderBy(activityLog.id);
}

async function mailsTo(address: string) {
  await t.app.mailer.idle();
  return sink.to(address);
}

const validate = (id: number, body?: Json, token = admin.token) => api('POST', `/admin/prestataires/${id}/validate`, token, body);
const reject = (id: number, body: Json, token = admin.token) => api('POST', `/admin/prestataires/${id}/reject`, token, body);
const requestDocuments = (id: number, body: Json, token = admin.token) =>
  api('POST', `/admin/prestataires/${id}/request-documents`, token, body);
const suspend = (id: number, reason: string) => api('POST', `/admin/compliance/${id}/suspend`, admin.token, { reason });

type Queue = { data: { user: { id: number }; profile: { validation_status: string }; documents_count: number }[]; meta: { total: number } };
const queueIds = async (status?: string) => {
  const res = await api('GET', `/admin/prestataires/pending?per_page=100${status ? `&status=${status}` : ''}`, admin.token);
  expect(res.statusCode, res.body).toBe(200);
  return (res.json() as Queue).data.map((item) => item.user.id);
};

describe('the validation journey', () => {
  it('pending → documents requested → upload → pending → validated, with an e-mail at each decision', async () => {
    const p = await createPrestataire(t, { lang: 'fr' });
    expect(await queueIds()).toContain(p.user.id);

    const asked = await requestDocuments(p.user.id, {
      document_types: ['insurance', 'identity', 'insurance'],
      message: 'Votre attestation doit couvrir 2026.',
    });
    expect(asked.statusCode, asked.body).toBe(200);
    expect(asked.json().message).toBe('Documents requested');
    expect(asked.json().data.user.prestataire).toMatchObject({
      validation_status: 'documents_requested',
      validation_note: 'Votre attestation doit couvrir 2026.',
    });
    const [askedMail] = await mailsTo(p.email);
    expect(askedMail!.subject).toBe('Documents requis pour valider votre compte prestataire');
    expect(askedMail!.text).toContain("- Attestation d'assurance responsabilité civile professionnelle\n- Pièce d'identité du dirigeant");
    expect(askedMail!.text).toContain('Votre attestation doit couvrir 2026.');
    expect(askedMail!.text).toContain(p.profile!.businessName);

    expect(await queueIds()).not.toContain(p.user.id);
    expect(await queueIds('documents_requested')).toContain(p.user.id);
    const own = (await api('GET', '/prestataire/documents', p.token)).json().data;
    expect(own).toMatchObject({ validation_status: 'documents_requested', validation_note: 'Votre attestation doit couvrir 2026.' });

    expect((await uploadPdf(p.token, 'insurance')).statusCode).toBe(201);
    expect((await profileOf(p.user.id)).validationStatus).toBe('pending');
    expect(await queueIds()).toContain(p.user.id);

    const validated = await validate(p.user.id, { note: 'Dossier complet, bienvenue !' });
    expect(validated.statusCode, validated.body).toBe(200);
    expect(validated.json().message).toBe('Prestataire validated');
    expect(validated.json().data).toMatchObject({
      user: { id: p.user.id, role: 'prestataire', prestataire: { validation_status: 'validated', validation_note: 'Dossier complet, bienvenue !' } },
      suspended_at: null,
    });
    expect(validated.json().data.user.prestataire.validated_at).toEqual(expect.any(String));
    const mails = await mailsTo(p.email);
    expect(mails).toHaveLength(2);
    expect(mails[1]!.subject).toBe('Votre compte prestataire est validé');
    expect(mails[1]!.text).toContain('Dossier complet, bienvenue !');
    expect(await queueIds()).not.toContain(p.user.id);
  });

  it('e-mails in English to an English-speaking prestataire', async () => {
    const p = await createPrestataire(t, { lang: 'en' });
    await requestDocuments(p.user.id, { document_types: ['business_registration'] });
    expect((await validate(p.user.id)).statusCode).toBe(409);
    await uploadPdf(p.token, 'business_registration');
    expect((await validate(p.user.id)).statusCode).toBe(200);
    // Two messages sent moments apart may reach the SMTP server in either order.
    const mails = await mailsTo(p.email);
    const bySubject = (subject: string) => mails.find((m) => m.subject === subject);
    expect(mails.map((m) => m.subject).sort()).toEqual(['Documents needed to approve your provider account', 'Your provider account is approved']);
    expect(bySubject('Documents needed to approve your provider account')!.text).toContain('- Business registration (Kbis extract or SIRENE registration notice)');
    expect(bySubject('Your provider account is approved')!.text).not.toContain('A note from our team');
  });

  it('rejects a pending prestataire with its reason, kept and e-mailed', async () => {
    const p = await createPrestataire(t, { lang: 'en' });
    const reason = 'The SIRET does not match the business name on the Kbis extract.';
    const res = await reject(p.user.id, { reason: `  ${reason} ` });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().message).toBe('Prestataire rejected');
    expect(res.json().data.user.prestataire).toMatchObject({ validation_status: 'rejected', validation_note: reason, validated_at: null });
    const [mail] = await mailsTo(p.email);
    expect(mail!.subject).toBe('Your provider application was declined');
    expect(mail!.text).toContain(`Reason: ${reason}`);
    expect(await queueIds()).not.toContain(p.user.id);
  });

  it('suspends a validated prestataire and reinstates it through validate', async () => {
    const p = await createPrestataire(t, { status: 'validated', lang: 'fr' });
    const firstValidation = (await profileOf(p.user.id)).validatedAt;
    expect((await suspend(p.user.id, 'Attestation d’assurance expirée')).statusCode).toBe(200);
    expect((await profileOf(p.user.id)).suspendedAt).toBeInstanceOf(Date);
    expect(await mailsTo(p.email)).toHaveLength(1);

    const res = await validate(p.user.id, { note: 'Nouvelle attestation reçue' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().message).toBe('Prestataire reinstated');
    expect(res.json().data.suspended_at).toBeNull();
    const profile = await profileOf(p.user.id);
    expect(profile).toMatchObject({ validationStatus: 'validated', suspendedAt: null, validationNote: 'Nouvelle attestation reçue' });
    expect(profile.validatedAt).toEqual(firstValidation);
    const mails = await mailsTo(p.email);
    expect(mails.map((m) => m.subject)).toEqual(['Votre compte prestataire est suspendu', 'Votre compte prestataire est réactivé']);
    expect(mails[0]!.text).toContain('Motif : Attestation d’assurance expirée');
    const [entry] = await activity(p.user.id, 'prestataire.reinstated');
    expect(entry).toMatchObject({
      actorId: admin.user.id,
      before: { validation_status: 'suspended', validation_note: 'Attestation d’assurance expirée' },
      after: { validation_status: 'validated', validation_note: 'Nouvelle attestation reçue' },
    });
  });
});

describe('forbidden moves', () => {
  const cases: { move: string; from: ValidationStatus[]; call: (id: number) => Promise<LightMyRequestResponse> }[] = [
    { move: 'validate', from: ['validated', 'rejected', 'documents_requested'], call: (id) => validate(id) },
    { move: 'reject', from: ['validated', 'rejected', 'documents_requested', 'suspended'], call: (id) => reject(id, { reason: 'Not eligible' }) },
    {
      move: 'request-documents',
      from: ['validated', 'rejected', 'documents_requested', 'suspended'],
      call: (id) => requestDocuments(id, { document_types: ['insurance'] }),
    },
  ];
  for (const c of cases) {
    it(`answers 409 to ${c.move} from ${c.from.join(', ')}, changing nothing and e-mailing nobody`, async () => {
      for (const status of c.from) {
        const p = await createPrestataire(t, { status });
        const body = expectError(await c.call(p.user.id), 409, 'conflict');
        expect(body.message).toContain(`validation status is ${status}`);
        expect(body.current_status).toBe(status);
        expect((await profileOf(p.user.id)).validationStatus).toBe(status);
        expect(await mailsTo(p.email)).toEqual([]);
      }
    });
  }

  it('lets only one of two racing decisions win; the other answers 409 with the state the winner left', async () => {
    const p = await createPrestataire(t);
    const [a, b] = await Promise.all([validate(p.user.id), reject(p.user.id, { reason: 'Not eligible' })]);
    expect([a.statusCode, b.statusCode].sort()).toEqual([200, 409]);
    const [winner, loser] = a.statusCode === 200 ? [a, b] : [b, a];
    const state = winner.json().data.user.prestataire.validation_status;
    expect(expectError(loser, 409, 'conflict').current_status).toBe(state);
    expect((await profileOf(p.user.id)).validationStatus).toBe(state);
    const entries = [...(await activity(p.user.id, 'prestataire.validated')), ...(await activity(p.user.id, 'prestataire.rejected'))];
    expect(entries).toHaveLength(1);
  });

  it('validates once when two administrators validate at the same moment: one 200, one 409, one entry, one e-mail', async () => {
    const p = await createPrestataire(t);
    const second = await createAdmin(t);
    const [a, b] = await Promise.all([validate(p.user.id, { note: 'First' }), validate(p.user.id, { note: 'Second' }, second.token)]);
    expect([a.statusCode, b.statusCode].sort()).toEqual([200, 409]);
    const loser = a.statusCode === 409 ? a : b;
    const body = expectError(loser, 409, 'conflict');
    expect(body.current_status).toBe('validated');
    expect(body.message).toBe('Cannot validate a prestataire whose validation status is validated (allowed from: pending, suspended)');
    expect(await activity(p.user.id, 'prestataire.validated')).toHaveLength(1);
    expect(await mailsTo(p.email)).toHaveLength(1);
  });
});

describe('activity log', () => {
  it('records each admin decision with before and after', async () => {
    const a = await createPrestataire(t);
    await requestDocuments(a.user.id, { document_types: ['identity', 'other'], message: 'Recto verso' });
    const [asked] = await activity(a.user.id, 'prestataire.documents_requested');
    expect(asked).toMatchObject({
      actorId: admin.user.id,
      actorRole: 'admin',
      subjectType: 'user',
      before: { validation_status: 'pending', validation_note: null },
      after: { validation_status: 'documents_requested', validation_note: 'Recto verso', document_types: ['identity', 'other'] },
    });
    expect(asked!.requestId).toEqual(expect.any(String));

    const b = await createPrestataire(t);
    await validate(b.user.id);
    const [validated] = await activity(b.user.id, 'prestataire.validated');
    expect(validated).toMatchObject({
      actorId: admin.user.id,
      before: { validation_status: 'pending', validation_note: null },
      after: { validation_status: 'validated', validation_note: null },
    });

    const c = await createPrestataire(t);
    await reject(c.user.id, { reason: 'Activity outside the catalogue' });
    const [rejected] = await activity(c.user.id, 'prestataire.rejected');
    expect(rejected).toMatchObject({
      before: { validation_status: 'pending' },
      after: { validation_status: 'rejected', validation_note: 'Activity outside the catalogue' },
    });
  });
});

describe('input validation', () => {
  it('answers 422 for a missing, short or long reason, and for a bad note', async () => {
    const p = await createPrestataire(t);
    expect(Object.keys(fieldErrors(await reject(p.user.id, {})))).toEqual(['reason']);
    expect(Object.keys(fieldErrors(await reject(p.user.id, { reason: '  no ' })))).toEqual(['reason']);
    expect(Object.keys(fieldErrors(await reject(p.user.id, { reason: 'x'.repeat(2001) })))).toEqual(['reason']);
    expect(Object.keys(fieldErrors(await reject(p.user.id, { reason: 'bad\u0000byte' })))).toEqual(['reason']);
    expect(Object.keys(fieldErrors(await validate(p.user.id, { note: 'x'.repeat(2001) })))).toEqual(['note']);
    expect((await profileOf(p.user.id)).validationStatus).toBe('pending');
  });

  it('answers 422 for no, empty or unknown document types and a too long message', async () => {
    const p = await createPrestataire(t);
    expect(Object.keys(fieldErrors(await requestDocuments(p.user.id, {})))).toEqual(['document_types']);
    expect(Object.keys(fieldErrors(await requestDocuments(p.user.id, { document_types: [] })))).toEqual(['document_types']);
    expect(Object.keys(fieldErrors(await requestDocuments(p.user.id, { document_types: ['insurance', 'passport'] })))).toEqual([
      'document_types.1',
    ]);
    expect(Object.keys(fieldErrors(await requestDocuments(p.user.id, { document_types: ['insurance'], message: 'x'.repeat(2001) })))).toEqual([
      'message',
    ]);
    expect((await profileOf(p.user.id)).validationStatus).toBe('pending');
  });

  it('answers 404 for an unknown id, a client, an admin or a deleted prestataire, 422 for a malformed id', async () => {
    const client = await createClient(t);
    const gone = await createPrestataire(t);
    await t.database.db.update(users).set({ deletedAt: new Date() }).where(eq(users.id, gone.user.id));
    for (const id of [999999, client.user.id, admin.user.id, gone.user.id]) {
      expectError(await validate(id), 404, 'not_found');
      expectError(await reject(id, { reason: 'Not eligible' }), 404, 'not_found');
      expectError(await requestDocuments(id, { document_types: ['insurance'] }), 404, 'not_found');
      expectError(await api('GET', `/admin/prestataires/${id}`, admin.token), 404, 'not_found');
      expectError(await api('GET', `/admin/prestataires/${id}/documents`, admin.token), 404, 'not_found');
    }
    expectError(await api('GET', '/admin/prestataires/1e3', admin.token), 422, 'validation_error');
  });
});

describe('GET /admin/prestataires/pending', () => {
  it('lists pending prestataires oldest first, with their documents count, paginated', async () => {
    const older = await createPrestataire(t);
    const newer = await createPrestataire(t);
    await t.database.db.update(users).set({ createdAt: new Date('2020-01-01T00:00:00Z') }).where(eq(users.id, older.user.id));
    await uploadPdf(newer.token, 'insurance');
    await uploadPdf(newer.token, 'identity');

    const res = await api('GET', '/admin/prestataires/pending?per_page=100', admin.token);
    const body = res.json() as Queue;
    const ids = body.data.map((i) => i.user.id);
    expect(ids[0]).toBe(older.user.id);
    expect(ids.indexOf(newer.user.id)).toBeGreaterThan(0);
    expect(body.data.every((i) => i.profile.validation_status === 'pending')).toBe(true);
    const item = body.data.find((i) => i.user.id === newer.user.id);
    expect(item).toEqual({
      user: { id: newer.user.id, first_name: newer.user.firstName, last_name: newer.user.lastName, email: newer.email, created_at: expect.any(String) },
      profile: {
        business_name: newer.profile!.businessName,
        siret: newer.profile!.siret,
        postal_code: newer.profile!.postalCode,
        city: newer.profile!.city,
        validation_status: 'pending',
        validation_note: null,
        updated_at: expect.any(String),
      },
      documents_count: 2,
    });

    const page = await api('GET', '/admin/prestataires/pending?per_page=1&page=2', admin.token);
    expect(page.json().data).toHaveLength(1);
    expect(page.json().meta).toEqual({ current_page: 2, per_page: 1, total: body.meta.total, last_page: body.meta.total });
  });

  it('leaves out validated, rejected and suspended prestataires, and deleted accounts', async () => {
    const others = await Promise.all((['validated', 'rejected', 'suspended'] as const).map((status) => createPrestataire(t, { status })));
    const gone = await createPrestataire(t);
    await t.database.db.update(users).set({ deletedAt: new Date() }).where(eq(users.id, gone.user.id));
    const ids = [...(await queueIds()), ...(await queueIds('documents_requested'))];
    for (const p of [...others, gone]) expect(ids).not.toContain(p.user.id);
  });

  it('answers 422 for an unknown status or per_page beyond 100', async () => {
    expectError(await api('GET', '/admin/prestataires/pending?status=validated', admin.token), 422, 'validation_error');
    expectError(await api('GET', '/admin/prestataires/pending?per_page=101', admin.token), 422, 'validation_error');
  });
});

describe('GET /admin/prestataires/{prestataire}', () => {
  it('shows the account, the full profile, the documents and the checklist', async () => {
    const p = await createPrestataire(t);
    const insurance = (await uploadPdf(p.token, 'insurance')).json().data;
    const res = await api('GET', `/admin/prestataires/${p.user.id}`, admin.token);
    expect(res.statusCode, res.body).toBe(200);
    const { data } = res.json();
    expect(data.user).toMatchObject({
      id: p.user.id,
      email: p.email,
      role: 'prestataire',
      prestataire: { business_name: p.profile!.businessName, siret: p.profile!.siret, validation_status: 'pending' },
    });
    expect(data.suspended_at).toBeNull();
    expect(data.documents).toEqual([insurance]);
    expect(data.required).toEqual([
      { type: 'business_registration', provided: false, valid: false, expires_on: null },
      { type: 'insurance', provided: true, valid: true, expires_on: null },
      { type: 'identity', provided: false, valid: false, expires_on: null },
    ]);
    expect(data.complete).toBe(false);
    expect(res.body).not.toMatch(/argon2|private\//);

    const docs = await api('GET', `/admin/prestataires/${p.user.id}/documents`, admin.token);
    expect(docs.statusCode).toBe(200);
    expect(docs.json().data).toEqual([insurance]);
  });
});

describe('security', () => {
  it('answers 401 without a token and 403 to clients and prestataires on every admin route', async () => {
    const p = await createPrestataire(t);
    const client = await createClient(t);
    const routes: [method: 'GET' | 'POST', url: string, body?: Json][] = [
      ['GET', '/admin/prestataires/pending'],
      ['GET', `/admin/prestataires/${p.user.id}`],
      ['GET', `/admin/prestataires/${p.user.id}/documents`],
      ['POST', `/admin/prestataires/${p.user.id}/validate`, {}],
      ['POST', `/admin/prestataires/${p.user.id}/reject`, { reason: 'Not eligible' }],
      ['POST', `/admin/prestataires/${p.user.id}/request-documents`, { document_types: ['insurance'] }],
    ];
    for (const [method, url, body] of routes) {
      expectError(await api(method, url, undefined, body), 401, 'unauthenticated');
      expectError(await api(method, url, client.token, body), 403, 'forbidden');
      expectError(await api(method, url, p.token, body), 403, 'forbidden');
    }
    expect((await profileOf(p.user.id)).validationStatus).toBe('pending');
  });

  it("answers 401 to a suspended admin's token", async () => {
    const other = await createAdmin(t);
    await t.database.db.update(users).set({ status: 'suspended' }).where(eq(users.id, other.user.id));
    expectError(await api('GET', '/admin/prestataires/pending', other.token), 401, 'unauthenticated');
  });
});
