import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, buildTestApp, createAdmin, createClient, createPrestataire, expectError, type TestApp } from './helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp();
});
afterAll(() => t.close());

interface VehicleBody {
  id: number;
  make: string;
  model: string;
  year: number;
  vin: string | null;
  plate: string | null;
  fuel: string | null;
  engine: string | null;
  mileage: number | null;
  nickname: string | null;
  repairdata_vehicle_id: string | null;
}

async function create(token: string, payload: Record<string, unknown>) {
  return t.app.inject({ method: 'POST', url: '/api/v1/vehicles', headers: bearer(token), payload });
}

const clio = { make: 'Renault', model: 'Clio', year: 2019, vin: 'vf1rj000x62345678', plate: 'ab 123 cd', fuel: 'diesel', mileage: 84_000 };

describe('vehicles: happy path', () => {
  it('creates, lists, shows, updates and deletes a vehicle, normalising VIN and plate', async () => {
    const client = await createClient(t);
    const res = await create(client.token, { ...clio, nickname: 'La rouge', engine: '1.5 dCi 90', owner_id: 999, id: 5 });
    expect(res.statusCode, res.body).toBe(201);
    const vehicle = (res.json() as { data: VehicleBody }).data;
    expect(vehicle).toMatchObject({
      make: 'Renault',
      model: 'Clio',
      year: 2019,
      vin: 'VF1RJ000X62345678',
      plate: 'AB-123-CD',
      fuel: 'diesel',
      mileage: 84_000,
      nickname: 'La rouge',
      engine: '1.5 dCi 90',
      repairdata_vehicle_id: null,
    });
    expect(vehicle.id).not.toBe(5);

    const list = await t.app.inject({ method: 'GET', url: '/api/v1/vehicles', headers: bearer(client.token) });
    expect(list.json()).toMatchObject({ data: [{ id: vehicle.id }], meta: { total: 1, current_page: 1, last_page: 1 } });

    const shown = await t.app.inject({ method: 'GET', url: `/api/v1/vehicles/${vehicle.id}`, headers: bearer(client.token) });
    expect((shown.json() as { data: VehicleBody }).data.plate).toBe('AB-123-CD');

    const patched = await t.app.inject({
      method: 'PATCH',
      url: `/api/v1/vehicles/${vehicle.id}`,
      headers: bearer(client.token),
      payload: { mileage: 90_000, plate: '1234 ab 69' },
    });
    expect(patched.statusCode, patched.body).toBe(200);
    expect((patched.json() as { data: VehicleBody }).data).toMatchObject({ mileage: 90_000, plate: '1234 AB 69', make: 'Renault' });

    const put = await t.app.inject({
      method: 'PUT',
      url: `/api/v1/vehicles/${vehicle.id}`,
      headers: bearer(client.token),
      payload: { nickname: null },
    });
    expect((put.json() as { data: VehicleBody }).data.nickname).toBeNull();

    const deleted = await t.app.inject({ method: 'DELETE', url: `/api/v1/vehicles/${vehicle.id}`, headers: bearer(client.token) });
    expect(deleted.json()).toEqual({ message: 'Vehicle deleted' });
    expectError(await t.app.inject({ method: 'GET', url: `/api/v1/vehicles/${vehicle.id}`, headers: bearer(client.token) }), 404, 'not_found');
    const after = await t.app.inject({ method: 'GET', url: '/api/v1/vehicles', headers: bearer(client.token) });
    expect(after.json()).toMatchObject({ data: [], meta: { total: 0 } });
    // The VIN is free again once the vehicle is deleted.
    expect((await create(client.token, clio)).statusCode).toBe(201);
  });

  it('answers HEAD like GET', async () => {
    const client = await createClient(t);
    const res = await t.app.inject({ method: 'HEAD', url: '/api/v1/vehicles', headers: bearer(client.token) });
    expect(res.statusCode).toBe(200);
  });
});


describe('vehicles: the garage, page by page', () => {
  it('pages the live vehicles newest first, with the total of the garage on every page and past the end', async () => {
    const client = await createClient(t);
    const other = await createClient(t);
    const ids: number[] = [];
    for (const model of ['Clio', 'Megane', 'Kangoo', 'Zoe', 'Twingo']) {
      const res = await create(client.token, { make: 'Renault', model, year: 2020 });
      expect(res.statusCode, res.body).toBe(201);
      ids.push((res.json() as { data: VehicleBody }).data.id);
    }
    expect((await create(other.token, { make: 'Peugeot', model: '208', year: 2021 })).statusCode).toBe(201);
    const removed = await t.app.inject({ method: 'DELETE', url: `/api/v1/vehicles/${ids[0]}`, headers: bearer(client.token) });
    expect(removed.statusCode, removed.body).toBe(200);

    const pageOf = async (page: number) => {
      const res = await t.app.inject({ method: 'GET', url: `/api/v1/vehicles?page=${page}&per_page=3`, headers: bearer(client.token) });
      expect(res.statusCode, res.body).toBe(200);
      return res.json() as { data: VehicleBody[]; meta: Record<string, number> };
    };
    const meta = { per_page: 3, total: 4, last_page: 2 };
    const first = await pageOf(1);
    expect(first.data.map((v) => v.id)).toEqual([ids[4], ids[3], ids[2]]);
    expect(first.meta).toEqual({ ...meta, current_page: 1 });
    expect(first.data[0]).not.toHaveProperty('total');
    const second = await pageOf(2);
    expect(second.data.map((v) => v.id)).toEqual([ids[1]]);
    expect(second.meta).toEqual({ ...meta, current_page: 2 });
    const beyond = await pageOf(5);
    expect(beyond).toEqual({ data: [], meta: { ...meta, current_page: 5 } });

    const empty = await t.app.inject({ method: 'GET', url: '/api/v1/vehicles', headers: bearer((await createClient(t)).token) });
    expect(empty.json()).toMatchObject({ data: [], meta: { total: 0, current_page: 1 } });
  });
});
describe('vehicles: errors', () => {
  it('validates every field with dotted paths', async () => {
    const client = await createClient(t);
    const res = await create(client.token, {
      make: '',
      model: 'x'.repeat(200),
      year: 1800,
      vin: 'VF1RJ000X6234567O',
      plate: 'AB-1234-CD',
      fuel: 'steam',
      mileage: -1,
    });
    const body = expectError(res, 422, 'validation_error');
    expect(Object.keys(body.errors!).sort()).toEqual(['fuel', 'make', 'mileage', 'model', 'plate', 'vin', 'year']);
    expect(body.errors!.vin![0]).toMatch(/I, O or Q/);
    expect(body.errors!.plate![0]).toMatch(/French plate/);
  });

  it('refuses a year after next year, and a wrong North American check digit', async () => {
    const client = await createClient(t);
    const nextNext = new Date().getUTCFullYear() + 2;
    expectError(await create(client.token, { make: 'Renault', model: 'Clio', year: nextNext }), 422, 'validation_error');
    const res = await create(client.token, { make: 'Honda', model: 'Accord', year: 2003, vin: '1HGCM82643A004352' });
    expect(expectError(res, 422, 'validation_error').errors!.vin![0]).toMatch(/check digit/);
    expect((await create(client.token, { make: 'Honda', model: 'Accord', year: 2003, vin: '1HGCM82633A004352' })).statusCode).toBe(201);
  });

  it('refuses a second vehicle with the same VIN or plate for one owner (409), but not across owners', async () => {
    const a = await createClient(t);
    const b = await createClient(t);
    const vin = 'WVWZZZAUZKW123456';
    expect((await create(a.token, { make: 'Volkswagen', model: 'Golf', year: 2019, vin, plate: 'GH-456-JK' })).statusCode).toBe(201);
    expect(expectError(await create(a.token, { make: 'VW', model: 'Golf', year: 2019, vin }), 409, 'conflict').errors).toHaveProperty('vin');
    expect(expectError(await create(a.token, { make: 'VW', model: 'Golf', year: 2019, plate: 'gh456jk' }), 409, 'conflict').errors).toHaveProperty('plate');
    expect((await create(b.token, { make: 'Volkswagen', model: 'Golf', year: 2019, vin })).statusCode).toBe(201);

    // Updating another vehicle onto a taken plate is refused too; concurrent creations end with one.
    const other = await create(a.token, { make: 'Peugeot', model: '208', year: 2021 });
    const otherId = (other.json() as { data: VehicleBody }).data.id;
    const moved = await t.app.inject({
      method: 'PUT',
      url: `/api/v1/vehicles/${otherId}`,
      headers: bearer(a.token),
      payload: { plate: 'GH-456-JK' },
    });
    expectError(moved, 409, 'conflict');
    const racing = await Promise.all(
      [1, 2, 3].map(() => create(a.token, { make: 'Dacia', model: 'Sandero', year: 2020, plate: 'LM-789-NP' })),
    );
    expect(racing.map((r) => r.statusCode).sort()).toEqual([201, 409, 409]);
  });

  it('answers 422 for a non-numeric id and 404 for an unknown one', async () => {
    const client = await createClient(t);
    expectError(await t.app.inject({ method: 'GET', url: '/api/v1/vehicles/abc', headers: bearer(client.token) }), 422, 'validation_error');
    expectError(await t.app.inject({ method: 'GET', url: '/api/v1/vehicles/999999', headers: bearer(client.token) }), 404, 'not_found');
  });
});

describe('vehicles: security', () => {
  it('requires a token, and a client', async () => {
    expectError(await t.app.inject({ method: 'GET', url: '/api/v1/vehicles' }), 401, 'unauthenticated');
    const prestataire = await createPrestataire(t);
    const admin = await createAdmin(t);
    expectError(await create(prestataire.token, clio), 403, 'forbidden');
    expectError(await t.app.inject({ method: 'GET', url: '/api/v1/vehicles', headers: bearer(admin.token) }), 403, 'forbidden');
  });

  it("hides another client's vehicle behind 404 for every verb", async () => {
    const owner = await createClient(t);
    const other = await createClient(t);
    const res = await create(owner.token, { make: 'Toyota', model: 'Yaris', year: 2022 });
    const id = (res.json() as { data: VehicleBody }).data.id;
    for (const [method, payload] of [
      ['GET', undefined],
      ['PUT', { mileage: 1 }],
      ['PATCH', { mileage: 1 }],
      ['DELETE', undefined],
    ] as const) {
      expectError(await t.app.inject({ method, url: `/api/v1/vehicles/${id}`, headers: bearer(other.token), payload }), 404, 'not_found');
    }
    expectError(
      await t.app.inject({ method: 'POST', url: `/api/v1/vehicles/${id}/identify`, headers: bearer(other.token), payload: {} }),
      404,
      'not_found',
    );
    const list = await t.app.inject({ method: 'GET', url: '/api/v1/vehicles', headers: bearer(other.token) });
    expect(list.json()).toMatchObject({ data: [], meta: { total: 0 } });
    // Still there for its owner.
    const mine = await t.app.inject({ method: 'GET', url: `/api/v1/vehicles/${id}`, headers: bearer(owner.token) });
    expect((mine.json() as { data: VehicleBody }).data.mileage).toBeNull();
  });
});
