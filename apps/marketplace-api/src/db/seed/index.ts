import { readFile } from 'node:fs/promises';
import { inArray } from 'drizzle-orm';
import type { DbTx } from '../index.js';
import { cities, serviceCategories, services } from '../schema/index.js';
import { CATALOGUE } from './catalogue.js';

/** data/cities.json, built by scripts/build-cities.mjs; the same path from src/ and from dist/. */
export const citiesFile = new URL('../../../data/cities.json', import.meta.url);

/** One row of data/cities.json. */
export type CityRecord = [
  insee: string,
  name: string,
  postalCodes: string[],
  department: string,
  region: string | null,
  population: number,
  latitude: number,
  longitude: number,
];

// A thousand rows of eight columns stay far below PostgreSQL's 65 535 bind parameters.
const BATCH = 1000;

export async function loadCityRecords(): Promise<CityRecord[]> {
  const records = JSON.parse(await readFile(citiesFile, 'utf8')) as unknown;
  if (!Array.isArray(records)) throw new Error(`${citiesFile.pathname}: expected an array of cities`);
  return records as CityRecord[];
}

export interface SeedResult {
  categories: number;
  services: number;
  cities: number;
}

/**
 * Inserts the catalogue (by slug) and the cities (by INSEE code). Rows already there are left as
 * they are, so a re-run, or several instances starting at once, add only what is missing and never
 * undo an administrator's edit of a service.
 */
export async function seedReferenceData(db: DbTx): Promise<SeedResult> {
  const insertedCategories = await db
    .insert(serviceCategories)
    .values(
      CATALOGUE.map((c, i) => ({ slug: c.slug, name: c.name, description: c.description, icon: c.icon, position: i + 1 })),
    )
    .onConflictDoNothing({ target: serviceCategories.slug })
    .returning({ id: serviceCategories.id });

  const categoryIds = new Map(
    (
      await db
        .select({ id: serviceCategories.id, slug: serviceCategories.slug })
        .from(serviceCategories)
        .where(inArray(serviceCategories.slug, CATALOGUE.map((c) => c.slug)))
    ).map((c) => [c.slug, c.id]),
  );
  const serviceRows = CATALOGUE.flatMap((category) => {
    const categoryId = categoryIds.get(category.slug);
    if (categoryId === undefined) throw new Error(`service category ${category.slug} was not seeded`);
    return category.services.map((s, i) => ({
      categoryId,
      slug: s.slug,
      name: s.name,
      description: s.description,
      durationMinutes: s.durationMinutes,
      priceCents: s.priceCents,
      currency: 'EUR',
      position: i + 1,
    }));
  });
  const insertedServices = await db
    .insert(services)
    .values(serviceRows)
    .onConflictDoNothing({ target: services.slug })
    .returning({ id: services.id });

  let insertedCities = 0;
  const records = await loadCityRecords();
  for (let start = 0; start < records.length; start += BATCH) {
    const rows = records.slice(start, start + BATCH).map(([insee, name, postalCodes, department, region, population, lat, lng]) => ({
      inseeCode: insee,
      name,
      postalCodes,
      departmentCode: department,
      regionCode: region,
      population,
      latitude: lat,
      longitude: lng,
    }));
    const inserted = await db
      .insert(cities)
      .values(rows)
      .onConflictDoNothing({ target: cities.inseeCode })
      .returning({ id: cities.id });
    insertedCities += inserted.length;
  }

  return { categories: insertedCategories.length, services: insertedServices.length, cities: insertedCities };
}
