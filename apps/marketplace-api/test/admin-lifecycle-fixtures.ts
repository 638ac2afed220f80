import {
  appointments,
  offers,
  prestataireServices,
  serviceCategories,
  serviceRequestPhotos,
  serviceRequests,
  services,
  vehicles,
  type Appointment,
  type Offer,
  type Service,
  type ServiceCategory,
  type ServiceRequest,
} from '../src/db/schema/index.js';
import { eq } from 'drizzle-orm';
import { users } from '../src/db/schema/index.js';
import { createAdmin, createClient, createPrestataire, unique, type NonAdminTokens, type TestApp } from './helpers.js';

/** The callers an admin-only route turns away: a client, a prestataire, a suspended administrator. */
export async function nonAdminTokens(t: TestApp): Promise<NonAdminTokens> {
  const suspended = await createAdmin(t);
  await t.database.db.update(users).set({ status: 'suspended' }).where(eq(users.id, suspended.user.id));
  return { client: (await createClient(t)).token, prestataire: (await createPrestataire(t)).token, suspendedAdmin: suspended.token };
}

/**
 * Lifecycle rows written straight through the schema, for tests of the routes that read them
 * (the routes that create them belong to other modules).
 */
export function lifecycleFixtures(t: TestApp) {
  const db = () => t.database.db;
  const hour = 3_600_000;

  return {
    async category(values: Partial<typeof serviceCategories.$inferInsert> = {}): Promise<ServiceCategory> {
      const n = unique();
      const [row] = await db()
        .insert(serviceCategories)
        .values({ slug: `categorie-${n}`, name: `Catégorie ${n}`, position: 1000 + n, ...values })
        .returning();
      return row!;
    },

    async service(categoryId: number, values: Partial<typeof services.$inferInsert> = {}): Promise<Service> {
      const n = unique();
      const [row] = await db()
        .insert(services)
        .values({ categoryId, slug: `service-${n}`, name: `Service ${n}`, durationMinutes: 60, ...values })
        .returning();
      return row!;
    },

    async offerService(prestataireId: number, serviceId: number) {
      await db().insert(prestataireServices).values({ prestataireId, serviceId });
    },

    async vehicle(ownerId: number, values: Partial<typeof vehicles.$inferInsert> = {}) {
      const n = unique();
      const [row] = await db()
        .insert(vehicles)
        .values({ ownerId, make: 'Renault', model: 'Clio', year: 2019, plate: `AB-${String(100 + (n % 900))}-CD`, ...values })
        .returning();
      return row!;
    },

    async request(
      values: Pick<typeof serviceRequests.$inferInsert, 'clientId' | 'vehicleId' | 'serviceId'> & Partial<typeof serviceRequests.$inferInsert>,
    ): Promise<ServiceRequest> {
      const [row] = await db()
        .insert(serviceRequests)
        .values({
          description: 'Bruit au freinage',
          latitude: 45.7578,
          longitude: 4.832,
          expiresAt: new Date(Date.now() + 14 * 24 * hour),
          ...values,
        })
        .returning();
      return row!;
    },

    async photo(serviceRequestId: number, storageKey: string) {
      const [row] = await db().insert(serviceRequestPhotos).values({ serviceRequestId, storageKey }).returning();
      return row!;
    },

    async offer(values: Pick<typeof offers.$inferInsert, 'serviceRequestId' | 'prestataireId'> & Partial<typeof offers.$inferInsert>): Promise<Offer> {
      const [row] = await db()
        .insert(offers)
        .values({
          amountCents: 12_000,
          proposedStartAt: new Date(Date.now() + 48 * hour),
          durationMinutes: 60,
          validUntil: new Date(Date.now() + 7 * 24 * hour),
          ...values,
        })
        .returning();
      return row!;
    },

    async appointment(
      values: Pick<typeof appointments.$inferInsert, 'serviceRequestId' | 'clientId' | 'prestataireId' | 'vehicleId' | 'serviceId' | 'startsAt'> &
        Partial<typeof appointments.$inferInsert>,
    ): Promise<Appointment> {
      const [row] = await db()
        .insert(appointments)
        .values({ endsAt: new Date(values.startsAt.getTime() + hour), priceCents: 12_000, ...values })
        .returning();
      return row!;
    },
  };
}
