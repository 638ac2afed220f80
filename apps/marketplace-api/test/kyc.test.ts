import { and, eq } from 'drizzle-orm';
import { DateTime } from 'luxon';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activityLog, kycVerifications, users } from '../src/db/schema/index.js';
import { comparableName, createBuiltinKycVerifier, hasAge } from '../src/integrations/kyc/kyc.js';
import type { Actor } from '../src/lib/context.js';
import { createClock, todayIn } from '../src/lib/time.js';
import { createActivityRecorder } from '../src/modules/activity-log/activity-log.recorder.js';
import { KycBody } from '../src/modules/identity-check/identity-check.schemas.js';
import { createKycService } from '../src/modules/identity-check/identity-check.service.js';
import { createOutbox } from '../src/modules/outbox/outbox.js';
import { eventsOf } from '../src/modules/outbox/outbox.repository.js';
import { bearer, buildTestApp, createAdmin, createClient, createPrestataire, expectError, type TestApp, type TestUser } from './helpers.js';

/** The zone the test app's calendar runs in (PLATFORM_TIME_ZONE's default). */
const PLATFORM_ZONE = 'Europe/Paris';

/** A date `years` years (and `days` days) from the platform's today, YYYY-MM-DD (negative for the past). */
function dateFromToday(years: number, days = 0): string {
  return DateTime.fromISO(todayIn(PLATFORM_ZONE), { zone: 'utc' }).plus({ years, days }).toISODate()!;
}

interface KycAnswer {
  data: { status: string; reasons: string[]; checked_at: string; user: { id: number; kyc_status: string } };
  message: string;
}

describe('POST /client/kyc/validate', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await buildTestApp({ RATE_LIMIT_AUTHENTICATED: '100000', RATE_LIMIT_PUBLIC: '100000' });
  });
  afterAll(async () => {
    await t?.close();
  });

  const submit = (token: string | null, payload: Record<string, unknown>) =>
    t.app.inject({ method: 'POST', url: '/api/v1/client/kyc/validate', headers: token ? bearer(token) : {}, payload });

  /** A submission that the built-in verifier accepts for this client. */
  function validBody(client: TestUser, overrides: Record<string, unknown> = {}) {
    return {
      first_name: client.user.firstName,
      last_name: client.user.lastName,
      birth_date: '1990-04-15',
      document_type: 'id_card',
      document_number: 'X4RTBPFW4',
      document_expires_on: dateFromToday(5),
      nationality: 'FR',
      ...overrides,
    };
  }

  describe('happy path', () => {
    it('verifies a matching, valid document and keeps only the last four characters of its number', async () => {
      const client = await createClient(t, { firstName: 'Élodie', lastName: "D'Arc-Dupont" });
      const res = await submit(
        client.token,
        validBody(client, { first_name: 'ELODIE', last_name: 'd’arc dupont', document_number: '8803 9201 4471', nationality: 'fr' }),
      );
      expect(res.statusCode, res.body).toBe(200);
      const body = res.json<KycAnswer>();
      expect(body.data).toMatchObject({ status: 'verified', reasons: [], user: { id: client.user.id, kyc_status: 'verified' } });
      expect(new Date(body.data.checked_at).getTime()).toBeGreaterThan(Date.now() - 60_000);

      const rows = await t.database.db.select().from(kycVerifications).where(eq(kycVerifications.userId, client.user.id));
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({
        documentType: 'id_card',
        documentNumberLast4: '4471',
        nationality: 'FR',
        verifier: 'builtin',
        status: 'verified',
        reasons: [],
        birthDate: '1990-04-15',
      });
      expect(JSON.stringify(rows[0])).not.toContain('880392014471');

      const [user] = await t.database.db.select().from(users).where(eq(users.id, client.user.id));
      expect(user?.kycStatus).toBe('verified');
      const [entry] = await t.database.db
        .select()
        .from(activityLog)
        .where(and(eq(activityLog.action, 'user.kyc_checked'), eq(activityLog.subjectId, client.user.id)));
      expect(entry).toMatchObject({ actorId: client.user.id, before: { kyc_status: 'none' }, after: { kyc_status: 'verified', verification_id: rows[0]!.id } });
      expect(JSON.stringify(entry)).not.toContain('880392014471');
      const events = (await eventsOf(t.database.db, 'user', client.user.id)).filter((e) => e.type === 'user.kyc_checked');
      expect(events).toEqual([expect.objectContaining({ actorId: client.user.id, payload: expect.objectContaining({ from: 'none', to: 'verified', verifier: 'builtin' }) })]);
      expect(JSON.stringify(events)).not.toContain('880392014471');
    });

    it('accepts each document type in its format', async () => {
      const cases: [string, string][] = [
        ['id_card', '880392014471'],
        ['passport', '12AB34567'],
        ['residence_permit', 'RP1234567'],
        ['driving_licence', '150692100456'],
      ];
      for (const [type, number] of cases) {
        const client = await createClient(t);
        const res = await submit(client.token, validBody(client, { document_type: type, document_number: number, nationality: undefined }));
        expect(res.statusCode, `${type}: ${res.body}`).toBe(200);
        expect(res.json<KycAnswer>().data.status).toBe('verified');
      }
    });

    it('accepts a document expiring today', async () => {
      const client = await createClient(t);
      const res = await submit(client.token, validBody(client, { document_expires_on: dateFromToday(0) }));
      expect(res.json<KycAnswer>().data.status).toBe('verified');
    });
  });

  describe('rejections (200 with reasons)', () => {
    it('rejects an expired document, then accepts a new submission', async () => {
      const client = await createClient(t);
      const res = await submit(client.token, validBody(client, { document_expires_on: dateFromToday(0, -1) }));
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json<KycAnswer>().data).toMatchObject({ status: 'rejected', reasons: ['document_expired'], user: { kyc_status: 'rejected' } });

      const again = await submit(client.token, validBody(client));
      expect(again.statusCode, again.body).toBe(200);
      expect(again.json<KycAnswer>().data).toMatchObject({ status: 'verified', user: { kyc_status: 'verified' } });
      const rows = await t.database.db.select().from(kycVerifications).where(eq(kycVerifications.userId, client.user.id));
      expect(rows.map((r) => r.status).sort()).toEqual(['rejected', 'verified']);
    });

    it('rejects a document that names someone else', async () => {
      const client = await createClient(t, { firstName: 'Camille', lastName: 'Bernard' });
      const res = await submit(client.token, validBody(client, { first_name: 'Camilla', last_name: 'Bernard' }));
      expect(res.json<KycAnswer>().data).toMatchObject({ status: 'rejected', reasons: ['first_name_mismatch'] });
      const both = await submit(client.token, validBody(client, { first_name: 'Jean', last_name: 'Durand', document_expires_on: '2020-01-01' }));
      expect(both.json<KycAnswer>().data.reasons).toEqual(['document_expired', 'first_name_mismatch', 'last_name_mismatch']);
    });
  });

  describe('errors', () => {
    it('answers 409 once the identity is verified', async () => {
      const client = await createClient(t);
      expect((await submit(client.token, validBody(client))).statusCode).toBe(200);
      expectError(await submit(client.token, validBody(client)), 409, 'conflict');
      const rows = await t.database.db.select().from(kycVerifications).where(eq(kycVerifications.userId, client.user.id));
      expect(rows).toHaveLength(1);
    });

    it('answers 409 with current_status, and records nothing, when another check verified the identity while the verifier ran', async () => {
      const client = await createClient(t);
      const db = t.database.db;
      const recorder = createActivityRecorder({ db });
      const racing = createKycService({
        db,
        recorder,
        outbox: createOutbox({ db }),
        clock: createClock(PLATFORM_ZONE),
        verifier: {
          name: 'slow-vendor',
          async verify() {
            // A second submission, answered first, committed its verification meanwhile.
            await db.update(users).set({ kycStatus: 'verified' }).where(eq(users.id, client.user.id));
            return { status: 'rejected', reasons: ['document_expired'] };
          },
        },
      });
      const actor: Actor = { kind: 'user', userId: client.user.id, role: 'client', sessionId: 's', requestId: 'kyc-race', ip: '192.0.2.1' };
      const body = KycBody.parse(validBody(client));
      await expect(racing.validate(actor, body)).rejects.toMatchObject({ statusCode: 409, code: 'conflict', extra: { current_status: 'verified' } });
      const [user] = await db.select().from(users).where(eq(users.id, client.user.id));
      expect(user?.kycStatus).toBe('verified');
      expect(await db.select().from(kycVerifications).where(eq(kycVerifications.userId, client.user.id))).toEqual([]);
      expect(await db.select().from(activityLog).where(and(eq(activityLog.action, 'user.kyc_checked'), eq(activityLog.subjectId, client.user.id)))).toEqual([]);
    });

    it('answers 422 on the field for each malformed value', async () => {
      const client = await createClient(t);
      const cases: [Record<string, unknown>, string][] = [
        [{ first_name: '' }, 'first_name'],
        [{ first_name: undefined }, 'first_name'],
        [{ last_name: '   ' }, 'last_name'],
        [{ last_name: '1234' }, 'last_name'],
        [{ birth_date: '15/04/1990' }, 'birth_date'],
        [{ birth_date: '2001-02-29' }, 'birth_date'],
        [{ birth_date: '1990-13-01' }, 'birth_date'],
        [{ birth_date: dateFromToday(1) }, 'birth_date'],
        [{ birth_date: dateFromToday(-18, 1) }, 'birth_date'],
        [{ birth_date: '1850-01-01' }, 'birth_date'],
        [{ document_type: 'library_card' }, 'document_type'],
        [{ document_type: 'id_card', document_number: 'ABC1234567' }, 'document_number'],
        [{ document_type: 'id_card', document_number: 'ABC-12345#' }, 'document_number'],
        [{ document_type: 'passport', document_number: 'AB1234567' }, 'document_number'],
        [{ document_type: 'passport', document_number: '12AB3456' }, 'document_number'],
        [{ document_type: 'driving_licence', document_number: '12345' }, 'document_number'],
        [{ document_type: 'residence_permit', document_number: 'A'.repeat(21) }, 'document_number'],
        [{ document_expires_on: '2030-02-30' }, 'document_expires_on'],
        [{ document_expires_on: 'soon' }, 'document_expires_on'],
        [{ nationality: 'FRA' }, 'nationality'],
        [{ nationality: 'ZZ' }, 'nationality'],
        [{ nationality: 'F1' }, 'nationality'],
      ];
      for (const [overrides, field] of cases) {
        const res = await submit(client.token, validBody(client, overrides));
        const body = expectError(res, 422, 'validation_error');
        expect(Object.keys(body.errors ?? {}), JSON.stringify(overrides)).toContain(field);
      }
      const [user] = await t.database.db.select().from(users).where(eq(users.id, client.user.id));
      expect(user?.kycStatus).toBe('none');
      expect(await t.database.db.select().from(kycVerifications).where(eq(kycVerifications.userId, client.user.id))).toHaveLength(0);
    });

    it("judges the birth date by the platform's calendar day, with a message saying which rule it breaks", async () => {
      const client = await createClient(t);
      const future = expectError(await submit(client.token, validBody(client, { birth_date: dateFromToday(0, 1) })), 422, 'validation_error');
      expect(future.errors).toEqual({ birth_date: ['Must not be in the future'] });
      const minor = expectError(await submit(client.token, validBody(client, { birth_date: dateFromToday(-18, 1) })), 422, 'validation_error');
      expect(minor.errors).toEqual({ birth_date: ['You must be at least 18 years old'] });
    });

    it('accepts someone who turns 18 today', async () => {
      const client = await createClient(t);
      const res = await submit(client.token, validBody(client, { birth_date: dateFromToday(-18) }));
      expect(res.statusCode, res.body).toBe(200);
    });
  });

  describe('security', () => {
    it('answers 401 without a token', async () => {
      expectError(await submit(null, { first_name: 'A' }), 401, 'unauthenticated');
    });

    it('answers 403 to prestataires and admins', async () => {
      const prestataire = await createPrestataire(t);
      expectError(await submit(prestataire.token, validBody(prestataire)), 403, 'forbidden');
      const admin = await createAdmin(t);
      expectError(await submit(admin.token, validBody(admin)), 403, 'forbidden');
    });

    it("answers 401 to a suspended client's token", async () => {
      const client = await createClient(t);
      await t.database.db.update(users).set({ status: 'suspended' }).where(eq(users.id, client.user.id));
      expectError(await submit(client.token, validBody(client)), 401, 'unauthenticated');
    });
  });
});

describe('built-in KYC verifier', () => {
  it('compares names without case, accents, ligatures or punctuation', () => {
    expect(comparableName('Élodie-Marie')).toBe(comparableName('ELODIE marie'));
    expect(comparableName('Œdipe')).toBe(comparableName('oedipe'));
    expect(comparableName("O'Brien")).toBe(comparableName('o brien'));
    expect(comparableName('Müller')).toBe('muller');
    expect(comparableName('Müller')).not.toBe(comparableName('Miller'));
  });

  it('counts a 29 February birthday on 1 March in common years', () => {
    expect(hasAge('2008-02-29', 18, '2026-02-28')).toBe(false);
    expect(hasAge('2008-02-29', 18, '2026-03-01')).toBe(true);
    expect(hasAge('2008-02-28', 18, '2026-02-28')).toBe(true);
  });

  it('rejects with every reason that applies', async () => {
    const verifier = createBuiltinKycVerifier({ today: () => '2026-06-01' });
    const result = await verifier.verify(
      {
        firstName: 'Ana',
        lastName: 'Silva',
        birthDate: '2010-01-01',
        documentType: 'passport',
        documentNumber: 'AB1234567',
        documentExpiresOn: '2026-05-31',
        nationality: 'PT',
      },
      { firstName: 'Ana', lastName: 'Silva' },
    );
    expect(result).toEqual({ status: 'rejected', reasons: ['document_number_invalid', 'document_expired', 'under_age'] });
  });
});
