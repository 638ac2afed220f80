import { eq } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { cities, prestataireProfiles, users } from '../../db/schema/index.js';

/** What an estimate needs of the prestataire: its own rate, its region (for a tariff grid) and its language. */
export async function findRateContext(db: DbTx, prestataireId: number) {
  const [row] = await db
    .select({ hourlyRateCents: prestataireProfiles.hourlyRateCents, regionCode: cities.regionCode, lang: users.lang })
    .from(prestataireProfiles)
    .innerJoin(users, eq(users.id, prestataireProfiles.userId))
    .leftJoin(cities, eq(cities.id, prestataireProfiles.cityId))
    .where(eq(prestataireProfiles.userId, prestataireId))
    .limit(1);
  return row;
}
