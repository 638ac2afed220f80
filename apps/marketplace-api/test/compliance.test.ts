import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activityLog, documents, prestataireProfiles, users, type DocumentType, type ValidationStatus } from '../src/db/schema/index.js';
import { addDays, todayIn } from '../src/lib/time.js';
import { bearer, buildTestApp, createAdmin, createClient, createPrestataire, expectError, type TestApp } from './helpers.js';
import { startSmtpSink } from './mail-sink.js';

let sink: Awaited<ReturnType<typeof startSmtpSink>>;
let t: TestApp;

/** The platform's calendar day, as the app counts expiry. */
const platformToday = () => todayIn(t.config.platformTimeZone);
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

type Json = Record<string, unknown> | undefined;
const api = (method: 'GET' | 'POST', url: string, token?: string, payload?: Json) =>
  t.app.inject({ method, url: `/api/v1${url}`, headers: token ? bearer(token) : {}, ...(payload === undefined ? {} : { payload }) });

const suspend = (id: number, body: Json, token = admin.token) => api('POST', `/admin/compliance/${id}/suspend`, token, body);

async function profileOf(userId: number) {
  const [row] = await t.database.db.select().from(prestataireProfiles).where(eq(prestataireProfiles.userId, userId));
  return row!;
}

async function mailsTo(address: string) {
  await t.app.mailer.idle();
  return sink.to(address);
}

/** A document row expiring `inDays` days from today (null: never); past dates cannot be uploaded, so rows go in directly. */
async function fileDocument(userId: number, type: DocumentType, inDays: number | null, name = `${type}.pdf`) {
  const [row] = await t.database.db
    .insert(documents)
    .values({
      userId,
      type,
      storageKey: `private/documents/2026/01/${userId}-${name}`,
      originalName: name,
      mimeType: 'application/pdf',
      sizeBytes: 1234,
      expiresOn: inDays === null ? null : addDays(platformToday(), inDays),
      uploadedBy: userId,
    })
    .returning();
  return row!;
}

interface ExpiringItem {
  id: number;
  type: string;
  expires_on: string;
  expired: boolean;
  days_left: number;
  prestataire: { id: number; business_name: string; email: string };
}

async function expiring(query = '', token = admin.token) {
  const res = await api('GET', `/admin/compliance/expiring-documents?per_page=100${query}`, token);
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as { data: ExpiringItem[]; meta: { total: number; current_page: number; per_page: number; last_page: number } };
}

describe('GET /admin/compliance/expiring-documents', () => {
  it('lists documents expiring within 30 days or already expired, soonest first, with days left', async () => {
    const a = await createPrestataire(t, { status: 'validated' });
    const b = await createPrestataire(t, { status: 'suspended' });
    const expiredLongAgo = await fileDocument(a.user.id, 'identity', -40);
    const inTen = await fileDocument(a.user.id, 'insurance', 10);
    const today = await fileDocument(b.user.id, 'insurance', 0);
    const lastDay = await fileDocument(b.user.id, 'business_registration', 30);
    await fileDocument(a.user.id, 'business_registration', 31);
    await fileDocument(a.user.id, 'other', null);

    const mine = new Set([a.user.id, b.user.id]);
    const items = (await expiring()).data.filter((d) => mine.has(d.prestataire.id));
    expect(items.map((d) => d.id)).toEqual([expiredLongAgo.id, today.id, inTen.id, lastDay.id]);
    expect(items.map((d) => d.days_left)).toEqual([-40, 0, 10, 30]);
    expect(items.map((d) => d.expired)).toEqual([true, false, false, false]);
    expect(items[1]).toEqual({
      id: today.id,
      type: 'insurance',
      original_name: 'insurance.pdf',
      mime_type: 'application/pdf',
      size_bytes: 1234,
      expires_on: platformToday(),
      expired: false,
      uploaded_by_admin: false,
      created_at: expect.any(String),
      days_left: 0,
      prestataire: { id: b.user.id, business_name: b.profile!.businessName, email: b.email },
    });
  });

  it('widens and narrows the window with days', async () => {
    const p = await createPrestataire(t, { status: 'validated' });
    const soon = await fileDocument(p.user.id, 'insurance', 3);
    const later = await fileDocument(p.user.id, 'identity', 200);
    const past = await fileDocument(p.user.id, 'business_registration', -1);
    const ids = async (days: number) => (await expiring(`&days=${days}`)).data.filter((d) => d.prestataire.id === p.user.id).map((d) => d.id);
    expect(await ids(1)).toEqual([past.id]);
    expect(await ids(3)).toEqual([past.id, soon.id]);
    expect(await ids(365)).toEqual([past.id, soon.id, later.id]);
  });

  it('only covers validated and suspended prestataires with live accounts', async () => {
    const statuses: ValidationStatus[] = ['pending', 'rejected', 'documents_requested'];
    const excluded = await Promise.all(statuses.map((status) => createPrestataire(t, { status })));
    const gone = await createPrestataire(t, { status: 'validated' });
    await t.database.db.update(users).set({ deletedAt: new Date() }).where(eq(users.id, gone.user.id));
    const client = await createClient(t);
    for (const p of [...excluded, gone]) await fileDocument(p.user.id, 'insurance', 5);
    await fileDocument(client.user.id, 'identity', 5);
    const ids = new Set((await expiring()).data.map((d) => d.prestataire.id));
    for (const u of [...excluded, gone, client]) expect(ids.has(u.user.id)).toBe(false);
  });

  it('leaves out a document already replaced by a longer-running one of the same type', async () => {
    const p = await createPrestataire(t, { status: 'validated' });
    await fileDocument(p.user.id, 'insurance', -2, 'old-insurance.pdf');
    await fileDocument(p.user.id, 'insurance', 360, 'new-insurance.pdf');
    await fileDocument(p.user.id, 'identity', -5, 'old-id.pdf');
    const renewedInWindow = await fileDocument(p.user.id, 'identity', 20, 'new-id.pdf');
    await fileDocument(p.user.id, 'business_registration', 4, 'kbis.pdf');
    await fileDocument(p.user.id, 'business_registration', null, 'kbis-permanent.pdf');
    // Unrelated papers: none replaces another.
    const otherA = await fileDocument(p.user.id, 'other', 7, 'permit.pdf');
    const otherB = await fileDocument(p.user.id, 'other', 9, 'certificate.pdf');
    const items = (await expiring()).data.filter((d) => d.prestataire.id === p.user.id);
    expect(items.map((d) => d.id)).toEqual([otherA.id, otherB.id, renewedInWindow.id]);
  });

  it('paginates with meta', async () => {
    const p = await createPrestataire(t, { status: 'validated' });
    await fileDocument(p.user.id, 'other', 1, 'a.pdf');
    await fileDocument(p.user.id, 'other', 2, 'b.pdf');
    const all = await expiring();
    const res = await api('GET', '/admin/compliance/expiring-documents?per_page=1&page=2', admin.token);
    expect(res.json().data).toEqual([all.data[1]]);
    expect(res.json().meta).toEqual({ current_page: 2, per_page: 1, total: all.meta.total, last_page: all.meta.total });
  });

  it('answers 422 for days outside 1–365 or not a number', async () => {
    for (const days of ['0', '366', '-3', 'soon', '1.5']) {
      expectError(await api('GET', `/admin/compliance/expiring-documents?days=${days}`, admin.token), 422, 'validation_error');
    }
  });

  it('answers 401 without a token and 403 to clients and prestataires', async () => {
    expectError(await api('GET', '/admin/compliance/expiring-documents'), 401, 'unauthenticated');
    expectError(await api('GET', '/admin/compliance/expiring-documents', (await createClient(t)).token), 403, 'forbidden');
    expectError(await api('GET', '/admin/compliance/expiring-documents', (await createPrestataire(t, { status: 'validated' })).token), 403, 'forbidden');
  });
});

describe('POST /admin/compliance/{prestataire}/suspend', () => {
  it('hides the prestataire from the public at once, and reinstatement brings it back', async () => {
    const p = await createPrestataire(t, { status: 'validated' });
    const searchIds = async () => {
      const search = await api('GET', `/prestataires?q=${encodeURIComponent(p.profile!.businessName)}&per_page=100`);
      expect(search.statusCode, search.body).toBe(200);
      return search.json().data.map((x: { id: number }) => x.id);
    };
    expect((await api('GET', `/prestataires/${p.user.id}`)).statusCode).toBe(200);
    expect(await searchIds()).toContain(p.user.id);
    expect((await suspend(p.user.id, { reason: 'Expired insurance' })).statusCode).toBe(200);
    expectError(await api('GET', `/prestataires/${p.user.id}`), 404, 'not_found');
    expect(await searchIds()).not.toContain(p.user.id);
    expect((await api('POST', `/admin/prestataires/${p.user.id}/validate`, admin.token)).statusCode).toBe(200);
    expect((await api('GET', `/prestataires/${p.user.id}`)).statusCode).toBe(200);
  });

  it('suspends a validated prestataire at once, keeps the reason, logs it and e-mails it', async () => {
    const p = await createPrestataire(t, { status: 'validated', lang: 'en' });
    const reason = 'Your insurance certificate expired on 1 March.';
    const res = await suspend(p.user.id, { reason });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().message).toBe('Prestataire suspended');
    expect(res.json().data.user.prestataire).toMatchObject({ validation_status: 'suspended', validation_note: reason });
    expect(res.json().data.suspended_at).toEqual(expect.any(String));
    const profile = await profileOf(p.user.id);
    expect(profile.validationStatus).toBe('suspended');
    expect(profile.suspendedAt).toBeInstanceOf(Date);

    const entries = await t.database.db
      .select()
      .from(activityLog)
      .where(and(eq(activityLog.subjectId, p.user.id), eq(activityLog.action, 'prestataire.suspended')));
    expect(entries).toEqual([
      expect.objectContaining({
        actorId: admin.user.id,
        actorRole: 'admin',
        subjectType: 'user',
        before: { validation_status: 'validated', validation_note: null },
        after: { validation_status: 'suspended', validation_note: reason },
      }),
    ]);
    const [mail] = await mailsTo(p.email);
    expect(mail!.subject).toBe('Your provider account is suspended');
    expect(mail!.text).toContain(`Reason: ${reason}`);

    // The suspended prestataire still reaches its own space to fix its documents.
    const own = await api('GET', '/prestataire/documents', p.token);
    expect(own.json().data).toMatchObject({ validation_status: 'suspended', validation_note: reason });
  });

  it('answers 409 from every state but validated, changing nothing', async () => {
    for (const status of ['pending', 'rejected', 'documents_requested', 'suspended'] as const) {
      const p = await createPrestataire(t, { status });
      const body = expectError(await suspend(p.user.id, { reason: 'Expired insurance' }), 409, 'conflict');
      expect(body.message).toContain(status);
      expect((await profileOf(p.user.id)).validationStatus).toBe(status);
      expect(await mailsTo(p.email)).toEqual([]);
    }
  });

  it('answers 422 without a proper reason and 404 for anyone but a prestataire', async () => {
    const p = await createPrestataire(t, { status: 'validated' });
    expectError(await suspend(p.user.id, {}), 422, 'validation_error');
    expectError(await suspend(p.user.id, { reason: 'no' }), 422, 'validation_error');
    expectError(await suspend(p.user.id, { reason: 'x'.repeat(2001) }), 422, 'validation_error');
    expect((await profileOf(p.user.id)).validationStatus).toBe('validated');
    const client = await createClient(t);
    for (const id of [999999, client.user.id, admin.user.id]) expectError(await suspend(id, { reason: 'Expired insurance' }), 404, 'not_found');
  });

  it('answers 401 without a token and 403 to clients and prestataires', async () => {
    const p = await createPrestataire(t, { status: 'validated' });
    expectError(await suspend(p.user.id, { reason: 'Expired insurance' }, ''), 401, 'unauthenticated');
    expectError(await suspend(p.user.id, { reason: 'Expired insurance' }, (await createClient(t)).token), 403, 'forbidden');
    expectError(await suspend(p.user.id, { reason: 'Expired insurance' }, p.token), 403, 'forbidden');
    expect((await profileOf(p.user.id)).validationStatus).toBe('validated');
  });
});
