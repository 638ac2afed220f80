import { eq } from 'drizzle-orm';
import {
  appointments,
  availabilities,
  offers,
  prestataireProfiles,
  serviceCategories,
  serviceRequests,
  services,
  vehicles,
  type Appointment,
  type Offer,
  type OfferStatus,
  type ServiceRequest,
  type ServiceRequestStatus,
} from '../src/db/schema/index.js';
import { createClient, createPrestataire, unique, type TestApp, type TestUser } from './helpers.js';

// Requests, offers and appointments inserted directly through the schema: the tests of the moves
// and the timers do not depend on the routes that create them.

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

const serviceIds = new WeakMap<object, number>();

/** One service of the catalogue per database. */
export async function aService(t: Pick<TestApp, 'database'>): Promise<number> {
  const known = serviceIds.get(t.database);
  if (known !== undefined) return known;
  const n = unique();
  const [category] = await t.database.db.insert(serviceCategories).values({ slug: `lifecycle-${n}`, name: `Lifecycle ${n}` }).returning();
  const [service] = await t.database.db
    .insert(services)
    .values({ categoryId: category!.id, slug: `oil-change-${n}`, name: 'Oil change', durationMinutes: 60, priceCents: 9000 })
    .returning();
  serviceIds.set(t.database, service!.id);
  return service!.id;
}

/** A validated prestataire open every day, all day (00:00–23:59 in its zone). */
export async function anOpenPrestataire(t: TestApp, timezone = 'Europe/Paris'): Promise<TestUser> {
  const p = await createPrestataire(t, { status: 'validated' });
  await t.database.db.update(prestataireProfiles).set({ timezone }).where(eq(prestataireProfiles.userId, p.user.id));
  await t.database.db
    .insert(availabilities)
    .values([1, 2, 3, 4, 5, 6, 7].map((dayOfWeek) => ({ prestataireId: p.user.id, dayOfWeek, startTime: '00:00', endTime: '23:59' })));
  return p;
}

export async function aVehicle(t: Pick<TestApp, 'database'>, ownerId: number) {
  const [vehicle] = await t.database.db.insert(vehicles).values({ ownerId, make: 'Renault', model: 'Clio', year: 2019, plate: `AB-${String(unique() % 1000).padStart(3, '0')}-CD` }).returning();
  return vehicle!;
}

export interface RequestOptions {
  /** Its client; a new one (through the app's accounts) when absent. */
  client?: Pick<TestUser, 'user'>;
  status?: ServiceRequestStatus;
  expiresAt?: Date;
  prestataireId?: number | null;
}

export async function aRequest<C extends Pick<TestUser, 'user'> = TestUser>(
  t: TestApp,
  opts: RequestOptions & { client?: C } = {},
): Promise<{ request: ServiceRequest; client: C }> {
  const client = (opts.client ?? (await createClient(t))) as C;
  const vehicle = await aVehicle(t, client.user.id);
  const [request] = await t.database.db
    .insert(serviceRequests)
    .values({
      clientId: client.user.id,
      vehicleId: vehicle.id,
      serviceId: await aService(t),
      prestataireId: opts.prestataireId ?? null,
      description: 'The oil light is on',
      latitude: 45.7578,
      longitude: 4.832,
      status: opts.status ?? 'open',
      expiresAt: opts.expiresAt ?? new Date(Date.now() + 14 * DAY),
    })
    .returning();
  return { request: request!, client };
}

export async function anOffer(
  t: TestApp,
  request: ServiceRequest,
  opts: { prestataire?: Pick<TestUser, 'user'>; status?: OfferStatus; validUntil?: Date; amountCents?: number } = {},
): Promise<Offer> {
  const prestataire = opts.prestataire ?? (await anOpenPrestataire(t));
  const [offer] = await t.database.db
    .insert(offers)
    .values({
      serviceRequestId: request.id,
      prestataireId: prestataire.user.id,
      amountCents: opts.amountCents ?? 12_000,
      proposedStartAt: new Date(Date.now() + 2 * DAY),
      durationMinutes: 90,
      validUntil: opts.validUntil ?? new Date(Date.now() + 7 * DAY),
      status: opts.status ?? 'pending',
    })
    .returning();
  return offer!;
}

export interface BookingOptions {
  client?: TestUser;
  prestataire?: TestUser;
  startsAt?: Date;
  durationMinutes?: number;
  priceCents?: number;
  status?: Appointment['status'];
  paidAt?: Date | null;
  timezone?: string;
}

export interface Booking {
  appointment: Appointment;
  request: ServiceRequest;
  offer: Offer;
  client: TestUser;
  prestataire: TestUser;
}

/** An accepted request, its accepted offer and the appointment booked from it (two days ahead, 10:00 UTC, 90 minutes, by default). */
export async function aBooking(t: TestApp, opts: BookingOptions = {}): Promise<Booking> {
  const prestataire = opts.prestataire ?? (await anOpenPrestataire(t, opts.timezone));
  const { request, client } = await aRequest(t, { client: opts.client, status: 'accepted' });
  const startsAt = opts.startsAt ?? new Date(Math.floor((Date.now() + 2 * DAY) / DAY) * DAY + 10 * HOUR);
  const duration = opts.durationMinutes ?? 90;
  const price = opts.priceCents ?? 12_000;
  const offer = await anOffer(t, request, { prestataire, status: 'accepted', amountCents: price });
  const [appointment] = await t.database.db
    .insert(appointments)
    .values({
      serviceRequestId: request.id,
      offerId: offer.id,
      clientId: client.user.id,
      prestataireId: prestataire.user.id,
      vehicleId: request.vehicleId,
      serviceId: request.serviceId,
      startsAt,
      endsAt: new Date(startsAt.getTime() + duration * 60_000),
      priceCents: price,
      status: opts.status ?? 'scheduled',
      paidAt: opts.paidAt ?? null,
      startedAt: opts.status === 'in_progress' || opts.status === 'ended' ? startsAt : null,
      endedAt: opts.status === 'ended' ? new Date(startsAt.getTime() + duration * 60_000) : null,
    })
    .returning();
  return { appointment: appointment!, request, offer, client, prestataire };
}

export { DAY, HOUR };
