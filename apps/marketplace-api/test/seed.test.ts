import { count, eq, inArray } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { cities, serviceCategories, services } from '../src/db/schema/index.js';
import { CATALOGUE } from '../src/db/seed/catalogue.js';
import { loadCityRecords, seedReferenceData } from '../src/db/seed/index.js';
import { buildTestApp, type TestApp } from './helpers.js';

let t: TestApp;

beforeAll(async () => {
  t = await buildTestApp({ SEED_REFERENCE_DATA: 'true' });
});

afterAll(async () => {
  await t.close();
});

describe('reference data seeding', () => {
  it('seeds the catalogue at start-up', async () => {
    const db = t.database.db;
    const [categories] = await db.select({ n: count() }).from(serviceCategories);
    const [servicesCount] = await db.select({ n: count() }).from(services);
    expect(categories?.n).toBe(CATALOGUE.length);
    expect(servicesCount?.n).toBe(CATALOGUE.reduce((n, c) => n + c.services.length, 0));
    expect(CATALOGUE.length).toBeGreaterThanOrEqual(8);
    expect(servicesCount?.n).toBeGreaterThanOrEqual(30);

    const [vidange] = await db
      .select({ service: services, category: serviceCategories })
      .from(services)
      .innerJoin(serviceCategories, eq(serviceCategories.id, services.categoryId))
      .where(eq(services.slug, 'vidange-filtre-huile'));
    expect(vidange?.category.slug).toBe('entretien');
    expect(vidange?.service).toMatchObject({ currency: 'EUR', active: true });
    expect(vidange?.service.durationMinutes).toBeGreaterThan(0);
    expect(vidange?.service.priceCents).toBeGreaterThan(0);
  });

  it('seeds every city of the dataset, with Paris, Lyon and Marseille and their postal codes', async () => {
    const db = t.database.db;
    const records = await loadCityRecords();
    expect(records.length).toBeGreaterThan(4500);
    const [total] = await db.select({ n: count() }).from(cities);
    expect(total?.n).toBe(records.length);

    const big = await db.select().from(cities).where(inArray(cities.inseeCode, ['75056', '69123', '13055']));
    const byCode = new Map(big.map((c) => [c.inseeCode, c]));
    expect(byCode.get('75056')).toMatchObject({ name: 'Paris', departmentCode: '75', regionCode: '11' });
    expect(byCode.get('75056')?.postalCodes).toContain('75116');
    expect(byCode.get('75056')?.postalCodes).toHaveLength(21);
    expect(byCode.get('69123')).toMatchObject({ name: 'Lyon', departmentCode: '69' });
    expect(byCode.get('69123')?.postalCodes).toEqual(['69001', '69002', '69003', '69004', '69005', '69006', '69007', '69008', '69009']);
    expect(byCode.get('13055')).toMatchObject({ name: 'Marseille', departmentCode: '13' });
    expect(byCode.get('13055')?.postalCodes).toHaveLength(16);

    const near = (value: number | undefined, expected: number) => expect(Math.abs((value ?? 0) - expected)).toBeLessThan(0.05);
    near(byCode.get('75056')?.latitude, 48.8566);
    near(byCode.get('75056')?.longitude, 2.3522);
    near(byCode.get('69123')?.latitude, 45.764);
    near(byCode.get('69123')?.longitude, 4.8357);
    near(byCode.get('13055')?.latitude, 43.2965);
    near(byCode.get('13055')?.longitude, 5.3698);
    expect(byCode.get('75056')?.population).toBeGreaterThan(2_000_000);
  });

  it('is idempotent: a second run inserts nothing and keeps an administrator’s edits', async () => {
    const db = t.database.db;
    await db.update(services).set({ name: 'Vidange (tarif maison)' }).where(eq(services.slug, 'vidange-filtre-huile'));
    const before = await Promise.all([
      db.select({ n: count() }).from(serviceCategories),
      db.select({ n: count() }).from(services),
      db.select({ n: count() }).from(cities),
    ]);

    const again = await seedReferenceData(db);
    expect(again).toEqual({ categories: 0, services: 0, cities: 0 });

    const after = await Promise.all([
      db.select({ n: count() }).from(serviceCategories),
      db.select({ n: count() }).from(services),
      db.select({ n: count() }).from(cities),
    ]);
    expect(after).toEqual(before);
    const [vidange] = await db.select().from(services).where(eq(services.slug, 'vidange-filtre-huile'));
    expect(vidange?.name).toBe('Vidange (tarif maison)');
  });

  it('restores a missing row on the next run', async () => {
    const db = t.database.db;
    await db.delete(cities).where(eq(cities.inseeCode, '69266'));
    const again = await seedReferenceData(db);
    expect(again).toEqual({ categories: 0, services: 0, cities: 1 });
    const [villeurbanne] = await db.select().from(cities).where(eq(cities.inseeCode, '69266'));
    expect(villeurbanne).toMatchObject({ name: 'Villeurbanne', postalCodes: ['69100'] });
  });

  it('two concurrent runs neither fail nor duplicate', async () => {
    const db = t.database.db;
    await db.delete(cities).where(inArray(cities.inseeCode, ['13001', '13004']));
    const results = await Promise.all([seedReferenceData(db), seedReferenceData(db)]);
    expect(results[0].cities + results[1].cities).toBe(2);
    const rows = await db.select().from(cities).where(inArray(cities.inseeCode, ['13001', '13004']));
    expect(rows).toHaveLength(2);
  });
});

describe('SEED_REFERENCE_DATA', () => {
  it('defaults to on, and to off under NODE_ENV=test unless asked for', () => {
    expect(loadConfig({ NODE_ENV: 'development', DATA_DIR: 'memory://' }).seedReferenceData).toBe(true);
    expect(loadConfig({ NODE_ENV: 'test', DATA_DIR: 'memory://' }).seedReferenceData).toBe(false);
    expect(loadConfig({ NODE_ENV: 'test', DATA_DIR: 'memory://', SEED_REFERENCE_DATA: 'true' }).seedReferenceData).toBe(true);
    expect(loadConfig({ NODE_ENV: 'development', DATA_DIR: 'memory://', SEED_REFERENCE_DATA: 'false' }).seedReferenceData).toBe(false);
  });

  it('leaves the tables empty when off', async () => {
    const off = await buildTestApp();
    try {
      const [n] = await off.database.db.select({ n: count() }).from(cities);
      expect(n?.n).toBe(0);
    } finally {
      await off.close();
    }
  });
});
