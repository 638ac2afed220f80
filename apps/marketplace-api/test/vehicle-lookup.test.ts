import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, buildTestApp, createClient, createPrestataire, expectError, type TestApp } from './helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp();
});
afterAll(() => t.close());

interface RepairVehicleBody {
  id: string;
  make: string;
  model: string;
  category: string;
  year_from: number;
}

describe('vehicle lookup (bundled repair data)', () => {
  it('identifies a vehicle by plate in either spelling, and by VIN, publicly', async () => {
    const byPlate = await t.app.inject({ method: 'GET', url: '/api/v1/vehicles/lookup?plate=ab123cd' });
    expect(byPlate.statusCode, byPlate.body).toBe(200);
    expect((byPlate.json() as { data: RepairVehicleBody }).data).toMatchObject({ id: 'renault-clio-5-tce100', make: 'Renault', category: 'city' });
    const byVin = await t.app.inject({ method: 'GET', url: '/api/v1/vehicles/lookup?vin=VF1RJA00XK1234567' });
    expect(byVin.statusCode, byVin.body).toBe(200);
    expect((byVin.json() as { data: RepairVehicleBody }).data).toMatchObject({ make: 'Renault', model: 'Clio V' });
  });

  it('answers 404 for an unknown vehicle and 422 for bad or missing identifiers', async () => {
    expectError(await t.app.inject({ method: 'GET', url: '/api/v1/vehicles/lookup?plate=ZZ-999-ZZ' }), 404, 'not_found');
    expectError(await t.app.inject({ method: 'GET', url: '/api/v1/vehicles/lookup' }), 422, 'validation_error');
    expectError(await t.app.inject({ method: 'GET', url: '/api/v1/vehicles/lookup?plate=nope' }), 422, 'validation_error');
    expectError(await t.app.inject({ method: 'GET', url: '/api/v1/vehicles/lookup?plate=AB-123-CD&vin=VF1RJA00XK1234567' }), 422, 'validation_error');
  });

  it('lets a prestataire look a vehicle up, and no one else', async () => {
    const prestataire = await createPrestataire(t);
    const client = await createClient(t);
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/prestataire/vehicle/lookup', headers: bearer(prestataire.token), payload: { plate: 'GH-789-JK' } });
    expect((res.json() as { data: RepairVehicleBody }).data).toMatchObject({ id: 'tesla-model3-rwd' });
    expectError(await t.app.inject({ method: 'POST', url: '/api/v1/prestataire/vehicle/lookup', headers: bearer(client.token), payload: { plate: 'GH-789-JK' } }), 403, 'forbidden');
    expectError(await t.app.inject({ method: 'POST', url: '/api/v1/prestataire/vehicle/lookup', payload: { plate: 'GH-789-JK' } }), 401, 'unauthenticated');
    expectError(await t.app.inject({ method: 'POST', url: '/api/v1/prestataire/vehicle/lookup', headers: bearer(prestataire.token), payload: {} }), 422, 'validation_error');
  });

  it('links a garage vehicle to its repair-data vehicle, saving a plate given for it', async () => {
    const client = await createClient(t);
    const created = await t.app.inject({ method: 'POST', url: '/api/v1/vehicles', headers: bearer(client.token), payload: { make: 'Peugeot', model: '208', year: 2021 } });
    const id = (created.json() as { data: { id: number } }).data.id;
    // Neither VIN nor plate yet.
    expectError(await t.app.inject({ method: 'POST', url: `/api/v1/vehicles/${id}/identify`, headers: bearer(client.token), payload: {} }), 422, 'validation_error');
    const res = await t.app.inject({ method: 'POST', url: `/api/v1/vehicles/${id}/identify`, headers: bearer(client.token), payload: { plate: 'bc 234 de' } });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json() as { data: { vehicle: { plate: string; repairdata_vehicle_id: string; identified_at: string }; repairdata_vehicle: RepairVehicleBody } };
    expect(body.data.vehicle).toMatchObject({ plate: 'BC-234-DE', repairdata_vehicle_id: 'peugeot-208-2-puretech100' });
    expect(body.data.repairdata_vehicle.make).toBe('Peugeot');

    // A new plate makes the old identification void.
    const moved = await t.app.inject({ method: 'PATCH', url: `/api/v1/vehicles/${id}`, headers: bearer(client.token), payload: { plate: 'ZZ-999-ZY' } });
    expect((moved.json() as { data: { repairdata_vehicle_id: string | null } }).data.repairdata_vehicle_id).toBeNull();
    expectError(await t.app.inject({ method: 'POST', url: `/api/v1/vehicles/${id}/identify`, headers: bearer(client.token) }), 404, 'not_found');
  });
});

describe('vehicle lookup with a failing vendor', () => {
  let failing: TestApp;
  let server: ReturnType<typeof createServer>;
  beforeAll(async () => {
    server = createServer((_req, res) => res.writeHead(503, { 'content-type': 'application/json' }).end('{"error":"maintenance"}'));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    failing = await buildTestApp({
      REPAIRDATA_URL: `http://127.0.0.1:${port}`,
      REPAIRDATA_API_KEY: 'key',
      REPAIRDATA_MAX_ATTEMPTS: '2',
      REPAIRDATA_RETRY_BASE_MS: '10',
    });
  });
  afterAll(async () => {
    await failing.close();
    server.close();
  });

  it('answers 502 in the envelope, never 500', async () => {
    const res = await failing.app.inject({ method: 'GET', url: '/api/v1/vehicles/lookup?plate=AB-123-CD' });
    expectError(res, 502, 'bad_gateway');
  });
});
