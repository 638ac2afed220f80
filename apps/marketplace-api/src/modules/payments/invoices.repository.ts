import { eq, sql } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { appointments, invoiceCounters, invoices, prestataireProfiles, services, users, type Payment } from '../../db/schema/index.js';

/**
 * Issues the invoice of a payment with the next number of its year. The counter row is updated in
 * the caller's transaction: concurrent issues queue on it, and a rollback gives the number back.
 */
export async function issueInvoice(db: DbTx, paymentId: number, year: number) {
  const [existing] = await db.select().from(invoices).where(eq(invoices.paymentId, paymentId));
  if (existing) return existing;
  const [counter] = await db
    .insert(invoiceCounters)
    .values({ year, lastNumber: 1 })
    .onConflictDoUpdate({ target: invoiceCounters.year, set: { lastNumber: sql`${invoiceCounters.lastNumber} + 1` } })
    .returning();
  const sequence = counter!.lastNumber;
  const [row] = await db
    .insert(invoices)
    .values({ paymentId, year, sequence, number: `${year}-${String(sequence).padStart(6, '0')}` })
    .returning();
  return row!;
}

export async function findInvoice(db: DbTx, paymentId: number) {
  const [row] = await db.select().from(invoices).where(eq(invoices.paymentId, paymentId));
  return row;
}

/** What an invoice prints: the parties, the service, the appointment. */
export async function invoiceParties(db: DbTx, payment: Payment) {
  const [client] = await db
    .select({ firstName: users.firstName, lastName: users.lastName, email: users.email, lang: users.lang })
    .from(users)
    .where(eq(users.id, payment.clientId));
  const [seller] = await db
    .select({
      firstName: users.firstName,
      lastName: users.lastName,
      email: users.email,
      businessName: prestataireProfiles.businessName,
      siret: prestataireProfiles.siret,
      address: prestataireProfiles.address,
      postalCode: prestataireProfiles.postalCode,
      city: prestataireProfiles.city,
    })
    .from(users)
    .leftJoin(prestataireProfiles, eq(prestataireProfiles.userId, users.id))
    .where(eq(users.id, payment.prestataireId));
  const [appointment] = await db
    .select({ startsAt: appointments.startsAt, serviceName: services.name })
    .from(appointments)
    .innerJoin(services, eq(services.id, appointments.serviceId))
    .where(eq(appointments.id, payment.appointmentId));
  return { client: client!, seller: seller!, appointment: appointment! };
}

export async function userLang(db: DbTx, userId: number) {
  const [row] = await db.select({ lang: users.lang }).from(users).where(eq(users.id, userId));
  return row?.lang ?? 'fr';
}
