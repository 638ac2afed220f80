import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { users } from '../src/db/schema/index.js';
import {
  bearer,
  buildTestApp,
  createAdmin,
  createClient,
  createPrestataire,
  expectError,
  startRepairDataVendor,
  type RepairDataVendor,
  type TestApp,
} from './helpers.js';

const CLIO = 'renault-clio-4-dci90';
const TESLA = 'tesla-model3-rwd';
const base = '/api/v1/repairdata/vehicles';

let t: TestApp;
let token: string;

beforeAll(async () => {
  t = await buildTestApp();
  token = (await createClient(t)).token;
});
afterAll(async () => {
  await t.close();
});

const get = (url: string, auth = token) => t.app.inject({ method: 'GET', url, headers: bearer(auth) });
const batch = (vehicleId: string, body: unknown, auth = token) =>
  t.app.inject({ method: 'POST', url: `${base}/${vehicleId}/tasks/batch-times`, headers: bearer(auth), payload: body as object });

describe('GET /repairdata/vehicles/{vehicleId}', () => {
  it("answers the vehicle's profile in snake_case", async () => {
    const res = await get(`${base}/${CLIO}`);
    expect(res.statusCode, res.body).toBe(200);
    const { data } = res.json();
    expect(data).toMatchObject({
      id: CLIO,
      make: 'Renault',
      model: 'Clio IV',
      variant: '1.5 dCi 90',
      year_from: 2012,
      year_to: 2019,
      fuel: 'diesel',
      engine_code: 'K9K 608',
      engine_capacity_cc: 1461,
      power_kw: 66,
      category: 'city',
    });
    expect(data.systems).toContainEqual({ code: 'brakes', name: 'Brakes' });
    expect(data.service_intervals).toContainEqual({ description: 'Timing belt kit', km: 160000, months: 72 });
  });

  it('answers 404 for an unknown vehicle and 422 for a malformed id', async () => {
    expect(expectError(await get(`${base}/no-such-vehicle`), 404, 'not_found').message).toBe('Vehicle not found');
    const bad = expectError(await get(`${base}/bad.id`), 422, 'validation_error');
    expect(bad.errors?.vehicleId).toBeDefined();
    expectError(await get(`${base}/${'x'.repeat(65)}`), 422, 'validation_error');
  });
});

describe('GET /repairdata/vehicles/{vehicleId}/tasks', () => {
  it('lists the tasks of a vehicle, by free text and by system', async () => {
    const all = await get(`${base}/${CLIO}/tasks`);
    expect(all.statusCode, all.body).toBe(200);
    expect(all.json().data.length).toBeGreaterThanOrEqual(40);
    expect(all.json().data[0]).toEqual({ code: 'oil_filter_change', name: 'Engine oil and filter change', system_code: 'engine' });

    const pads = (await get(`${base}/${CLIO}/tasks?q=${encodeURIComponent('brake pads')}`)).json().data;
    expect(pads.map((x: { code: string }) => x.code)).toEqual(['brake_pads_front', 'brake_discs_front']);
    const cooling = (await get(`${base}/${CLIO}/tasks?system=cooling`)).json().data;
    expect(cooling.length).toBeGreaterThan(0);
    expect(cooling.every((x: { system_code: string }) => x.system_code === 'cooling')).toBe(true);
    expect((await get(`${base}/${CLIO}/tasks?q=filter&system=cooling`)).json().data).toEqual([]);
    // An empty search is no search.
    expect((await get(`${base}/${CLIO}/tasks?q=%20`)).json().data).toHaveLength(all.json().data.length);
    // An electric car has no oil change.
    expect((await get(`${base}/${TESLA}/tasks?q=oil`)).json().data).toEqual([]);
  });

  it('answers 404 for an unknown vehicle and 422 for bad filters', async () => {
    expect(expectError(await get(`${base}/no-such-vehicle/tasks`), 404, 'not_found').message).toBe('Vehicle not found');
    expect(expectError(await get(`${base}/${CLIO}/tasks?system=no%20way`), 422, 'validation_error').errors?.system).toBeDefined();
    expect(expectError(await get(`${base}/${CLIO}/tasks?q=${'a'.repeat(101)}`), 422, 'validation_error').errors?.q).toBeDefined();
  });
});

describe('GET /repairdata/vehicles/{vehicleId}/tasks/{taskCode}/times', () => {
  it('answers the labour time of a task', async () => {
    const res = await get(`${base}/${CLIO}/tasks/timing_belt_kit/times`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data).toEqual({
      task_code: 'timing_belt_kit',
      name: 'Timing belt kit replacement (belt, tensioner, idlers)',
      hours: 2.7,
      includes: ['water_pump', 'auxiliary_belt'],
      notes: null,
    });
  });

  it('says whether the vehicle or the task is unknown', async () => {
    expect(expectError(await get(`${base}/no-such-vehicle/tasks/brake_fluid/times`), 404, 'not_found').message).toBe('Vehicle not found');
    expect(expectError(await get(`${base}/${CLIO}/tasks/no_such_task/times`), 404, 'not_found').message).toBe('Task not found');
    // A task that exists in the catalogue but not on this vehicle.
    expect(expectError(await get(`${base}/${TESLA}/tasks/oil_filter_change/times`), 404, 'not_found').message).toBe('Task not found');
    expectError(await get(`${base}/${CLIO}/tasks/${encodeURIComponent('brake fluid')}/times`), 422, 'validation_error');
  });
});

describe('POST /repairdata/vehicles/{vehicleId}/tasks/batch-times', () => {
  it('answers the times it has and lists the unknown codes', async () => {
    const res = await batch(CLIO, { task_codes: ['brake_fluid', 'spark_plugs', 'timing_belt_kit', 'no_such_task'] });
    expect(res.statusCode, res.body).toBe(200);
    const { data } = res.json();
    expect(data.times.map((x: { task_code: string }) => x.task_code)).toEqual(['brake_fluid', 'timing_belt_kit']);
    expect(data.times[0]).toMatchObject({ name: 'Brake fluid replacement', hours: 0.7, includes: [] });
    expect(data.unknown).toEqual(['spark_plugs', 'no_such_task']);
  });

  it('answers 404 for an unknown vehicle and 422 for a bad list', async () => {
    expect(expectError(await batch('no-such-vehicle', { task_codes: ['brake_fluid'] }), 404, 'not_found').message).toBe('Vehicle not found');
    for (const body of [
      {},
      { task_codes: [] },
      { task_codes: 'brake_fluid' },
      { task_codes: ['brake_fluid', 'brake_fluid'] },
      { task_codes: ['brake fluid'] },
      { task_codes: Array.from({ length: 51 }, (_, i) => `task_${i}`) },
    ]) {
      const fields = Object.keys(expectError(await batch(CLIO, body), 422, 'validation_error').errors ?? {});
      expect(fields.some((f) => f.startsWith('task_codes')), JSON.stringify(body)).toBe(true);
    }
    expectError(await batch('bad.id', { task_codes: ['brake_fluid'] }), 422, 'validation_error');
  });
});

describe('GET /repairdata/vehicles/{vehicleId}/systems/{systemCode}/procedures', () => {
  it('answers the procedures of a system with torque values and warnings', async () => {
    const res = await get(`${base}/vw-golf-7-tdi110/systems/brakes/procedures`);
    expect(res.statusCode, res.body).toBe(200);
    const procedures = res.json().data;
    const front = procedures.find((p: { title: string }) => p.title === 'Front brake pads and discs replacement');
    expect(front.steps.length).toBeGreaterThan(3);
    expect(front.torque_specs).toContainEqual({ item: 'Wheel bolts', nm: 120 });
    expect(front.warnings.length).toBeGreaterThan(0);
  });

  it('says whether the vehicle or the system is unknown', async () => {
    expect(expectError(await get(`${base}/no-such-vehicle/systems/brakes/procedures`), 404, 'not_found').message).toBe('Vehicle not found');
    expect(expectError(await get(`${base}/${CLIO}/systems/warp_drive/procedures`), 404, 'not_found').message).toBe('System not found');
    // An electric car has no engine.
    expect(expectError(await get(`${base}/${TESLA}/systems/engine/procedures`), 404, 'not_found').message).toBe('System not found');
    expectError(await get(`${base}/${CLIO}/systems/${'s'.repeat(65)}/procedures`), 422, 'validation_error');
  });
});

describe('repair-data routes: security', () => {
  const urls = [
    `${base}/${CLIO}`,
    `${base}/${CLIO}/tasks`,
    `${base}/${CLIO}/tasks/brake_fluid/times`,
    `${base}/${CLIO}/systems/brakes/procedures`,
  ];

  it('answers 401 without a token, with a forged one, and to a suspended user', async () => {
    const suspended = await createClient(t);
    await t.database.db.update(users).set({ status: 'suspended' }).where(eq(users.id, suspended.user.id));
    for (const url of urls) {
      expectError(await t.app.inject({ method: 'GET', url }), 401, 'unauthenticated');
      expectError(await get(url, 'not-a-token'), 401, 'unauthenticated');
      expectError(await get(url, suspended.token), 401, 'unauthenticated');
    }
    const unauthenticated = await t.app.inject({ method: 'POST', url: `${base}/${CLIO}/tasks/batch-times`, payload: { task_codes: ['brake_fluid'] } });
    expectError(unauthenticated, 401, 'unauthenticated');
    expectError(await batch(CLIO, { task_codes: ['brake_fluid'] }, suspended.token), 401, 'unauthenticated');
  });

  it('serves every role', async () => {
    for (const user of [await createPrestataire(t, { status: 'validated' }), await createAdmin(t), await createPrestataire(t)]) {
      for (const url of urls) expect((await get(url, user.token)).statusCode, url).toBe(200);
      expect((await batch(CLIO, { task_codes: ['brake_fluid'] }, user.token)).statusCode).toBe(200);
    }
  });
});

describe('repair-data routes behind the vendor', () => {
  let vendor: RepairDataVendor;
  let v: TestApp;
  let vToken: string;

  beforeAll(async () => {
    vendor = await startRepairDataVendor({ apiKey: 'route-key' });
    v = await buildTestApp({
      REPAIRDATA_URL: vendor.url,
      REPAIRDATA_API_KEY: 'route-key',
      REPAIRDATA_TIMEOUT_MS: '150',
      REPAIRDATA_MAX_ATTEMPTS: '2',
      REPAIRDATA_RETRY_BASE_MS: '10',
      REPAIRDATA_CIRCUIT_FAILURES: '1000',
    });
    vToken = (await createClient(v)).token;
  });
  afterAll(async () => {
    await v?.close();
    await vendor?.close();
  });

  const vget = (url: string) => v.app.inject({ method: 'GET', url, headers: bearer(vToken) });

  it("answers from the vendor's API and then from the cache", async () => {
    const first = await vget(`${base}/${CLIO}`);
    expect(first.statusCode, first.body).toBe(200);
    const before = vendor.requests.length;
    const again = await vget(`${base}/${CLIO}`);
    expect(again.json()).toEqual(first.json());
    expect(vendor.requests.length).toBe(before);

    expect((await vget(`${base}/${CLIO}/tasks/no_such_task/times`)).json().message).toBe('Task not found');
    const res = await v.app.inject({
      method: 'POST',
      url: `${base}/${CLIO}/tasks/batch-times`,
      headers: bearer(vToken),
      payload: { task_codes: ['brake_fluid', 'no_such_task'] },
    });
    expect(res.json().data.unknown).toEqual(['no_such_task']);
  });

  it('answers 502 in the envelope when the vendor fails with 5xx', async () => {
    vendor.mode = 'error';
    try {
      const body = expectError(await vget(`${base}/renault-clio-5-tce100`), 502, 'bad_gateway');
      expect(body.message).toMatch(/^The repair-data service is unavailable/);
      const res = await v.app.inject({
        method: 'POST',
        url: `${base}/renault-clio-5-tce100/tasks/batch-times`,
        headers: bearer(vToken),
        payload: { task_codes: ['brake_fluid'] },
      });
      expectError(res, 502, 'bad_gateway');
    } finally {
      vendor.mode = 'ok';
    }
  });

  it('answers 502 when the vendor does not answer in time', async () => {
    vendor.mode = 'hang';
    try {
      expectError(await vget(`${base}/vw-polo-6-tsi95/systems/brakes/procedures`), 502, 'bad_gateway');
      expectError(await vget(`${base}/vw-polo-6-tsi95/tasks?q=pads`), 502, 'bad_gateway');
    } finally {
      vendor.mode = 'ok';
    }
    // Nothing was cached: the recovered vendor answers.
    expect((await vget(`${base}/vw-polo-6-tsi95/systems/brakes/procedures`)).statusCode).toBe(200);
  });

  it('answers 502 when the vendor answers malformed JSON', async () => {
    vendor.queue.push('malformed');
    expectError(await vget(`${base}/dacia-duster-2-dci115`), 502, 'bad_gateway');
  });
});
