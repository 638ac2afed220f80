import { createTestDatabase, type TestDatabase } from '@repo/db/testing';
import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { extensions, migrationsFolder, schema, type Schema } from '../src/db/index.js';
import { repairdataCache } from '../src/db/schema/index.js';
import { createBuiltinRepairData } from '../src/integrations/repairdata/builtin.js';
import { withRepairDataCache } from '../src/integrations/repairdata/cache.js';
import { createHttpRepairData, type HttpRepairDataOptions } from '../src/integrations/repairdata/http.js';
import { RepairDataUnavailableError } from '../src/integrations/repairdata/repairdata.js';
import { startRepairDataVendor, type RepairDataVendor } from './helpers.js';

const API_KEY = 'vendor-test-key';
const CLIO = 'renault-clio-4-dci90';
const builtin = createBuiltinRepairData();

let vendor: RepairDataVendor;
let database: TestDatabase<Schema>;

beforeAll(async () => {
  vendor = await startRepairDataVendor({ apiKey: API_KEY });
  database = await createTestDatabase({ schema, migrationsFolder, extensions });
});
afterAll(async () => {
  await vendor.close();
  await database.destroy();
});
beforeEach(() => {
  vendor.requests.length = 0;
  vendor.queue.length = 0;
  vendor.mode = 'ok';
});

function client(overrides: Partial<HttpRepairDataOptions> = {}) {
  return createHttpRepairData({
    url: vendor.url,
    apiKey: API_KEY,
    timeoutMs: 1000,
    maxAttempts: 3,
    retryBaseMs: 5,
    circuitFailures: 100,
    circuitOpenSeconds: 30,
    ...overrides,
  });
}

const unavailable = (promise: Promise<unknown>) => expect(promise).rejects.toBeInstanceOf(RepairDataUnavailableError);

describe('repair-data vendor client', () => {
  it("maps every answer of the vendor's API onto the interface, with the API key", async () => {
    const http = client();
    expect(http.kind).toBe('http');
    expect(await http.identify({ plate: 'AB-123-CD' })).toEqual(await builtin.identify({ plate: 'AB-123-CD' }));
    expect(await http.vehicle(CLIO)).toEqual(await builtin.vehicle(CLIO));
    expect(await http.searchTasks(CLIO, { q: 'brake', systemCode: 'brakes' })).toEqual(
      await builtin.searchTasks(CLIO, { q: 'brake', systemCode: 'brakes' }),
    );
    expect(await http.repairTime(CLIO, 'timing_belt_kit')).toEqual(await builtin.repairTime(CLIO, 'timing_belt_kit'));
    expect(await http.repairTimes(CLIO, ['timing_belt_kit', 'nope'])).toEqual(await builtin.repairTimes(CLIO, ['timing_belt_kit', 'nope']));
    expect(await http.procedures(CLIO, 'brakes')).toEqual(await builtin.procedures(CLIO, 'brakes'));

    expect(vendor.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'GET /vehicles/identify?plate=AB-123-CD',
      `GET /vehicles/${CLIO}`,
      `GET /vehicles/${CLIO}/tasks?q=brake&system=brakes`,
      `GET /vehicles/${CLIO}/tasks/timing_belt_kit/times`,
      `POST /vehicles/${CLIO}/tasks/times`,
      `GET /vehicles/${CLIO}/systems/brakes/procedures`,
    ]);
    expect(vendor.requests[4]!.body).toEqual({ codes: ['timing_belt_kit', 'nope'] });
    expect(vendor.requests.every((r) => r.authorization === `Bearer ${API_KEY}`)).toBe(true);
  });

  it('answers null on 404, without retrying', async () => {
    const http = client();
    expect(await http.vehicle('no-such-vehicle')).toBeNull();
    expect(await http.repairTime(CLIO, 'no_such_task')).toBeNull();
    expect(await http.identify({ plate: 'ZZ-999-ZZ' })).toBeNull();
    expect(vendor.requests).toHaveLength(3);
  });

  it('retries a timeout, then gives up as unavailable', async () => {
    vendor.mode = 'hang';
    const started = Date.now();
    await unavailable(client({ timeoutMs: 100 }).vehicle(CLIO));
    expect(vendor.requests).toHaveLength(3);
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
  });

  it('retries 5xx answers with backoff and takes the first good one', async () => {
    vendor.queue.push('error', 'error');
    expect(await client().vehicle(CLIO)).toEqual(await builtin.vehicle(CLIO));
    expect(vendor.requests).toHaveLength(3);
  });

  it('gives up after the last attempt on repeated 5xx', async () => {
    vendor.mode = 'error';
    await unavailable(client({ maxAttempts: 2 }).repairTimes(CLIO, ['brake_fluid']));
    expect(vendor.requests).toHaveLength(2);
  });

  it('never retries a 4xx refusal, which is a failure of the vendor for the caller', async () => {
    await unavailable(client({ apiKey: 'wrong-key' }).vehicle(CLIO));
    expect(vendor.requests).toHaveLength(1);
  });

  it('treats malformed JSON and an unexpected shape as unavailability', async () => {
    vendor.queue.push('malformed');
    await unavailable(client().vehicle(CLIO));
    vendor.queue.push('wrong_shape');
    await unavailable(client().searchTasks(CLIO, {}));
    vendor.queue.push('wrong_shape');
    await unavailable(client().procedures(CLIO, 'brakes'));
    expect(vendor.requests).toHaveLength(3);
  });

  it('opens the circuit after consecutive failures, fails fast, then lets one trial through', async () => {
    let clock = 1_000_000;
    const http = client({ maxAttempts: 1, circuitFailures: 3, circuitOpenSeconds: 30, now: () => clock });
    vendor.mode = 'error';
    for (let i = 0; i < 3; i++) await unavailable(http.vehicle(CLIO));
    expect(vendor.requests).toHaveLength(3);

    // Open: no call reaches the vendor, even once it has recovered.
    vendor.mode = 'ok';
    await unavailable(http.vehicle(CLIO));
    clock += 29_000;
    await unavailable(http.repairTime(CLIO, 'brake_fluid'));
    expect(vendor.requests).toHaveLength(3);

    // Half-open after 30 s: a failed trial opens it again at once.
    clock += 1_000;
    vendor.queue.push('error');
    await unavailable(http.vehicle(CLIO));
    expect(vendor.requests).toHaveLength(4);
    await unavailable(http.vehicle(CLIO));
    expect(vendor.requests).toHaveLength(4);

    // The next trial succeeds and closes it; while it is in flight, other calls still fail fast.
    clock += 30_000;
    const trial = http.vehicle(CLIO);
    await unavailable(http.vehicle(CLIO));
    expect(await trial).not.toBeNull();
    expect(await http.repairTime(CLIO, 'brake_fluid')).not.toBeNull();
    expect(vendor.requests).toHaveLength(6);
  });

  it('stops retrying as soon as the circuit opens', async () => {
    vendor.mode = 'error';
    await unavailable(client({ maxAttempts: 5, circuitFailures: 2 }).vehicle(CLIO));
    expect(vendor.requests).toHaveLength(2);
  });
});

describe('repair-data cache', () => {
  beforeEach(async () => {
    await database.db.delete(repairdataCache);
  });

  const cachedClient = (overrides: Partial<HttpRepairDataOptions> = {}) =>
    withRepairDataCache(client(overrides), { db: database.db, ttlHours: 24 });
  const entry = async (key: string) =>
    (await database.db.select().from(repairdataCache).where(eq(repairdataCache.key, key)))[0];

  it('answers a repeated call from the database, counting hits', async () => {
    const cached = cachedClient();
    expect(cached.kind).toBe('http');
    const first = await cached.vehicle(CLIO);
    const second = await cached.vehicle(CLIO);
    const third = await cached.vehicle(CLIO);
    expect(second).toEqual(first);
    expect(third).toEqual(first);
    expect(vendor.requests).toHaveLength(1);
    const row = (await entry(`vehicle:["${CLIO}"]`))!;
    expect(row.hits).toBe(2);
    expect(row.expiresAt.getTime() - row.createdAt.getTime()).toBe(24 * 3600 * 1000);
  });

  it('remembers "not found" too', async () => {
    const cached = cachedClient();
    expect(await cached.vehicle('no-such-vehicle')).toBeNull();
    expect(await cached.vehicle('no-such-vehicle')).toBeNull();
    expect(await cached.identify({ vin: 'JHMGE8800L0123456' })).toBeNull();
    expect(await cached.identify({ vin: 'jhm ge880 0l0123456' })).toBeNull();
    expect(vendor.requests).toHaveLength(2);
    expect((await entry('vehicle:["no-such-vehicle"]'))!.value).toBeNull();
  });

  it('calls the vendor again once the entry has expired', async () => {
    const cached = cachedClient();
    await cached.procedures(CLIO, 'brakes');
    await database.db
      .update(repairdataCache)
      .set({ expiresAt: sql`now() - interval '1 minute'` })
      .where(eq(repairdataCache.key, `procedures:["${CLIO}","brakes"]`));
    expect(await cached.procedures(CLIO, 'brakes')).toEqual(await builtin.procedures(CLIO, 'brakes'));
    expect(vendor.requests).toHaveLength(2);
    const row = (await entry(`procedures:["${CLIO}","brakes"]`))!;
    expect(row.hits).toBe(0);
    expect(row.expiresAt.getTime()).toBeGreaterThan(Date.now());
  });

  it('does not cache failures', async () => {
    const cached = cachedClient({ maxAttempts: 1 });
    vendor.queue.push('error');
    await unavailable(cached.searchTasks(CLIO, { q: 'pads' }));
    expect(await cached.searchTasks(CLIO, { q: 'pads' })).toEqual(await builtin.searchTasks(CLIO, { q: 'pads' }));
    expect(await cached.searchTasks(CLIO, { q: ' PADS ' })).toEqual(await builtin.searchTasks(CLIO, { q: 'pads' }));
    expect(vendor.requests).toHaveLength(2);
  });

  it('shares one vendor call between concurrent identical calls', async () => {
    const cached = cachedClient();
    const [a, b] = await Promise.all([cached.vehicle('vw-golf-7-tsi125'), cached.vehicle('vw-golf-7-tsi125')]);
    expect(a).toEqual(b);
    expect(vendor.requests).toHaveLength(1);
  });

  it('answers batches and single times from each other where it can', async () => {
    const cached = cachedClient();
    const batch = (await cached.repairTimes(CLIO, ['brake_fluid', 'timing_belt_kit', 'spark_plugs']))!;
    expect(batch.times.map((t) => t.taskCode)).toEqual(['brake_fluid', 'timing_belt_kit']);
    expect(batch.unknown).toEqual(['spark_plugs']);
    expect(vendor.requests).toHaveLength(1);

    // The batch filled the single-task entries, unknown codes included.
    expect(await cached.repairTime(CLIO, 'timing_belt_kit')).toEqual(batch.times[1]);
    expect(await cached.repairTime(CLIO, 'spark_plugs')).toBeNull();
    expect(await cached.repairTimes(CLIO, ['timing_belt_kit', 'spark_plugs'])).toEqual({ times: [batch.times[1]], unknown: ['spark_plugs'] });
    expect(vendor.requests).toHaveLength(1);

    // A code never seen needs the vendor; the same set again does not.
    expect((await cached.repairTimes(CLIO, ['brake_fluid', 'clutch_kit']))!.times).toHaveLength(2);
    expect((await cached.repairTimes(CLIO, ['clutch_kit', 'brake_fluid']))!.times).toHaveLength(2);
    expect(vendor.requests).toHaveLength(2);

    // An unknown vehicle is remembered as such.
    expect(await cached.repairTimes('no-such-vehicle', ['brake_fluid'])).toBeNull();
    expect(await cached.repairTimes('no-such-vehicle', ['brake_fluid'])).toBeNull();
    expect(vendor.requests).toHaveLength(3);
  });
});
