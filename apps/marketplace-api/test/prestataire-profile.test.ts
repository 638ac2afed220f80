import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activityLog, cities, prestataireProfiles, users } from '../src/db/schema/index.js';
import { bearer, buildTestApp, createAdmin, createClient, createPrestataire, expectError, unique, type TestApp } from './helpers.js';

interface ProfileAnswer {
  data: {
    id: number;
    role: string;
    prestataire: Record<string, unknown> & { siret: string; validation_status: string };
  };
  message: string;
}

describe('PUT /prestataire/profile', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await buildTestApp({ RATE_LIMIT_AUTHENTICATED: '100000', RATE_LIMIT_PUBLIC: '100000' });
  });
  afterAll(async () => {
    await t?.close();
  });

  const update = (token: string | null, payload: Record<string, unknown>, method: 'PUT' | 'PATCH' = 'PUT') =>
    t.app.inject({ method, url: '/api/v1/prestataire/profile', headers: token ? bearer(token) : {}, payload });

  async function city(values: { name: string; postalCodes: string[]; latitude: number; longitude: number }) {
    const [row] = await t.database.db
      .insert(cities)
      .values({ inseeCode: `T${unique()}`, departmentCode: values.postalCodes[0]!.slice(0, 2), ...values })
      .returning();
    return row!;
  }

  const profileRow = async (userId: number) =>
    (await t.database.db.select().from(prestataireProfiles).where(eq(prestataireProfiles.userId, userId)))[0]!;

  describe('happy path', () => {
    it('changes the given fields only and logs what changed', async () => {
      const prestataire = await createPrestataire(t, { status: 'validated' });
      const res = await update(prestataire.token, {
        business_name: '  Garage du Centre  ',
        description: 'Mécanique générale, freins, pneus.',
        service_radius_km: 45,
        timezone: 'Europe/Paris',
        hourly_rate_cents: 6500,
        public_phone: '04 78 12 34 56',
        website: 'https://garage-du-centre.fr/atelier',
        latitude: 45.76,
        longitude: 4.84,
      });
      expect(res.statusCode, res.body).toBe(200);
      const { data } = res.json<ProfileAnswer>();
      expect(data).toMatchObject({ id: prestataire.user.id, role: 'prestataire' });
      expect(data.prestataire).toMatchObject({
        business_name: 'Garage du Centre',
        description: 'Mécanique générale, freins, pneus.',
        service_radius_km: 45,
        timezone: 'Europe/Paris',
        hourly_rate_cents: 6500,
        currency: 'EUR',
        public_phone: '+33478123456',
        website: 'https://garage-du-centre.fr/atelier',
        latitude: 45.76,
        longitude: 4.84,
        // Untouched.
        address: prestataire.profile!.address,
        postal_code: prestataire.profile!.postalCode,
        city: prestataire.profile!.city,
        siret: prestataire.profile!.siret,
        validation_status: 'validated',
      });

      const [entry] = await t.database.db
        .select()
        .from(activityLog)
        .where(and(eq(activityLog.action, 'prestataire.profile_updated'), eq(activityLog.subjectId, prestataire.user.id)));
      expect(entry?.actorId).toBe(prestataire.user.id);
      // timezone was already Europe/Paris: not a change.
      expect(Object.keys(entry!.after!).sort()).toEqual(
        ['business_name', 'description', 'hourly_rate_cents', 'latitude', 'longitude', 'public_phone', 'service_radius_km', 'website'].sort(),
      );
      expect(entry!.before).toMatchObject({ business_name: prestataire.profile!.businessName, description: null, service_radius_km: 30 });
      expect(entry!.after).toMatchObject({ business_name: 'Garage du Centre', service_radius_km: 45 });
    });

    it('clears nullable fields with null or an empty string', async () => {
      const prestataire = await createPrestataire(t, {
        profile: { description: 'Old text', hourlyRateCents: 5000 },
      });
      await update(prestataire.token, { public_phone: '+33612345678', website: 'https://example.fr' });
      const res = await update(prestataire.token, { description: '', hourly_rate_cents: null, public_phone: null, website: '' });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json<ProfileAnswer>().data.prestataire).toMatchObject({
        description: null,
        hourly_rate_cents: null,
        public_phone: null,
        website: null,
      });
    });

    it('fills city, postal code and coordinates from city_id when not given', async () => {
      const villeurbanne = await city({ name: 'Villeurbanne', postalCodes: ['69100'], latitude: 45.7667, longitude: 4.8803 });
      const prestataire = await createPrestataire(t);
      const res = await update(prestataire.token, { city_id: villeurbanne.id, address: '3 cours Émile Zola' });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json<ProfileAnswer>().data.prestataire).toMatchObject({
        city_id: villeurbanne.id,
        city: 'Villeurbanne',
        postal_code: '69100',
        latitude: 45.7667,
        longitude: 4.8803,
        address: '3 cours Émile Zola',
      });
    });

    it('keeps what the body gives over the city, and a postal code of the same commune', async () => {
      const lyon = await city({ name: 'Lyon', postalCodes: ['69001', '69002', '69003'], latitude: 45.758, longitude: 4.835 });
      // The factory's profile is in 69002.
      const prestataire = await createPrestataire(t);
      const res = await update(prestataire.token, { city_id: lyon.id, latitude: 45.7601, longitude: 4.8422, city: 'Lyon 2e' });
      expect(res.json<ProfileAnswer>().data.prestataire).toMatchObject({
        city_id: lyon.id,
        city: 'Lyon 2e',
        postal_code: '69002',
        latitude: 45.7601,
        longitude: 4.8422,
      });
      const other = await update(prestataire.token, { city_id: lyon.id, postal_code: '69003' });
      expect(other.json<ProfileAnswer>().data.prestataire).toMatchObject({ postal_code: '69003', latitude: 45.758, city: 'Lyon' });
    });

    it('answers PATCH the same way', async () => {
      const prestataire = await createPrestataire(t);
      const res = await update(prestataire.token, { service_radius_km: 12 }, 'PATCH');
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json<ProfileAnswer>().data.prestataire.service_radius_km).toBe(12);
    });

    it('ignores SIRET, validation status and other fields that are not editable here', async () => {
      const prestataire = await createPrestataire(t);
      const res = await update(prestataire.token, {
        siret: '73282932000074',
        validation_status: 'validated',
        rating_average: 5,
        user_id: 1,
        business_name: 'Nouveau nom',
      });
      expect(res.statusCode, res.body).toBe(200);
      const row = await profileRow(prestataire.user.id);
      expect(row).toMatchObject({
        siret: prestataire.profile!.siret,
        validationStatus: 'pending',
        ratingAverage: null,
        userId: prestataire.user.id,
        businessName: 'Nouveau nom',
      });
    });

    it('writes nothing and logs nothing when nothing changes', async () => {
      const prestataire = await createPrestataire(t);
      const res = await update(prestataire.token, { business_name: prestataire.profile!.businessName, siret: '00000000000000' });
      expect(res.statusCode, res.body).toBe(200);
      const entries = await t.database.db
        .select()
        .from(activityLog)
        .where(and(eq(activityLog.action, 'prestataire.profile_updated'), eq(activityLog.subjectId, prestataire.user.id)));
      expect(entries).toHaveLength(0);
    });
  });

  describe('errors', () => {
    it('answers 422 on the field for each bad value, and changes nothing', async () => {
      const prestataire = await createPrestataire(t);
      const cases: [Record<string, unknown>, string][] = [
        [{ business_name: '' }, 'business_name'],
        [{ business_name: 'x'.repeat(256) }, 'business_name'],
        [{ description: 'd'.repeat(2001) }, 'description'],
        [{ address: '  ' }, 'address'],
        [{ postal_code: '6900' }, 'postal_code'],
        [{ postal_code: '69 002' }, 'postal_code'],
        [{ postal_code: 69002 }, 'postal_code'],
        [{ city: '' }, 'city'],
        [{ city_id: 999_999 }, 'city_id'],
        [{ city_id: 'lyon' }, 'city_id'],
        [{ city_id: 0 }, 'city_id'],
        [{ latitude: 45.7 }, 'longitude'],
        [{ longitude: 4.8 }, 'latitude'],
        [{ latitude: 91, longitude: 4.8 }, 'latitude'],
        [{ latitude: 45.7, longitude: -181 }, 'longitude'],
        [{ service_radius_km: 0 }, 'service_radius_km'],
        [{ service_radius_km: 501 }, 'service_radius_km'],
        [{ service_radius_km: 12.5 }, 'service_radius_km'],
        [{ timezone: 'Mars/Olympus_Mons' }, 'timezone'],
        [{ timezone: '+01:00' }, 'timezone'],
        [{ timezone: '' }, 'timezone'],
        [{ hourly_rate_cents: -1 }, 'hourly_rate_cents'],
        [{ hourly_rate_cents: 10_000_001 }, 'hourly_rate_cents'],
        [{ hourly_rate_cents: 65.5 }, 'hourly_rate_cents'],
        [{ public_phone: '12' }, 'public_phone'],
        [{ website: 'http://garage.fr' }, 'website'],
        [{ website: 'ftp://garage.fr' }, 'website'],
        [{ website: 'garage.fr' }, 'website'],
        [{ website: 'https://' }, 'website'],
      ];
      for (const [payload, field] of cases) {
        const res = await update(prestataire.token, payload);
        const body = expectError(res, 422, 'validation_error');
        expect(Object.keys(body.errors ?? {}), JSON.stringify(payload)).toContain(field);
      }
      const row = await profileRow(prestataire.user.id);
      expect(row.updatedAt.getTime()).toBe(prestataire.profile!.updatedAt.getTime());
    });

    it('accepts the boundaries', async () => {
      const prestataire = await createPrestataire(t);
      const low = await update(prestataire.token, {
        service_radius_km: 1,
        hourly_rate_cents: 0,
        timezone: 'America/Guadeloupe',
        latitude: -90,
        longitude: -180,
      });
      expect(low.statusCode, low.body).toBe(200);
      const high = await update(prestataire.token, {
        service_radius_km: 500,
        hourly_rate_cents: 10_000_000,
        description: 'd'.repeat(2000),
        latitude: 90,
        longitude: 180,
      });
      expect(high.statusCode, high.body).toBe(200);
      expect(high.json<ProfileAnswer>().data.prestataire).toMatchObject({ service_radius_km: 500, hourly_rate_cents: 10_000_000 });
    });
  });

  describe('security', () => {
    it('answers 401 without a token', async () => {
      expectError(await update(null, { business_name: 'X' }), 401, 'unauthenticated');
    });

    it('answers 403 to clients and admins', async () => {
      const client = await createClient(t);
      expectError(await update(client.token, { business_name: 'X' }), 403, 'forbidden');
      const admin = await createAdmin(t);
      expectError(await update(admin.token, { business_name: 'X' }), 403, 'forbidden');
    });

    it("answers 401 to a suspended prestataire's token", async () => {
      const prestataire = await createPrestataire(t);
      await t.database.db.update(users).set({ status: 'suspended' }).where(eq(users.id, prestataire.user.id));
      expectError(await update(prestataire.token, { business_name: 'X' }), 401, 'unauthenticated');
    });

    it("changes only the caller's own profile", async () => {
      const mine = await createPrestataire(t);
      const theirs = await createPrestataire(t);
      await update(mine.token, { business_name: 'Mine only' });
      expect((await profileRow(theirs.user.id)).businessName).toBe(theirs.profile!.businessName);
    });
  });
});
