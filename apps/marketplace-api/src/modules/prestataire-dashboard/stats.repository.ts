import { queryRows } from '@repo/db';
import { eq, sql, type SQL } from 'drizzle-orm';
import type { DbTx } from '../../db/index.js';
import { appointments, offers, payments, prestataireProfiles, serviceRequests, type AppointmentStatus } from '../../db/schema/index.js';
import type { GroupBy, Period } from '../../lib/periods.js';
import { bucketOf, bucketSeries, within } from '../admin-stats/index.js';

export async function findProfile(db: DbTx, userId: number) {
  const [row] = await db
    .select({ timezone: prestataireProfiles.timezone, ratingAverage: prestataireProfiles.ratingAverage, ratingCount: prestataireProfiles.ratingCount })
    .from(prestataireProfiles)
    .where(eq(prestataireProfiles.userId, userId));
  return row;
}

/**
 * The requests a prestataire received: those aimed at it and those it made an offer on (the open
 * requests merely within its radius are not counted: which ones it saw is not recorded). Each read
 * goes through an index by prestataire (service_requests_prestataire_idx, offers_prestataire_idx).
 */
function received(prestataireId: number): SQL {
  return sql`${serviceRequests.id} in (select ${serviceRequests.id} from ${serviceRequests} where ${serviceRequests.prestataireId} = ${prestataireId}
      union select ${offers.serviceRequestId} from ${offers} where ${offers.prestataireId} = ${prestataireId})`;
}

/** The net share of a payment: what the client paid less the platform's commission (charges that went through and stayed). */
const net = sql`${payments.amountCents} - ${payments.commissionCents}`;

export interface Totals extends Record<string, unknown> {
  requests_received: number;
  offers_sent: number;
  offers_accepted: number;
  revenue_cents: number;
}

export async function totals(db: DbTx, prestataireId: number, period: Period): Promise<Totals> {
  const [row] = await queryRows<Totals>(
    db,
    sql`select
      (select count(*)::int from ${serviceRequests} where ${received(prestataireId)} and ${within(serviceRequests.createdAt, period)}) as requests_received,
      o.sent as offers_sent, o.accepted as offers_accepted,
      (select coalesce(sum(${net}), 0)::float8 from ${payments}
        where ${payments.prestataireId} = ${prestataireId} and ${payments.status} = 'succeeded' and ${within(payments.paidAt, period)}) as revenue_cents
    from (select count(*)::int as sent, (count(*) filter (where ${offers.status} = 'accepted'))::int as accepted
            from ${offers} where ${offers.prestataireId} = ${prestataireId} and ${within(offers.createdAt, period)}) o`,
  );
  return row!;
}

/** Its appointments starting within the period, counted by status. */
export async function appointmentsByStatus(db: DbTx, prestataireId: number, period: Period) {
  return queryRows<{ status: AppointmentStatus; n: number }>(
    db,
    sql`select ${appointments.status} as status, count(*)::int as n from ${appointments}
      where ${appointments.prestataireId} = ${prestataireId} and ${within(appointments.startsAt, period)}
      group by 1`,
  );
}

export interface Bucket extends Record<string, unknown> {
  bucket: string;
  requests_received: number;
  offers_sent: number;
  offers_accepted: number;
  appointments: number;
  revenue_cents: number;
}

/** The same figures per local day, week or month of the prestataire's time zone; empty buckets answer 0. */
export function series(db: DbTx, prestataireId: number, period: Period, unit: GroupBy): Promise<Bucket[]> {
  const zone = period.zone;
  return queryRows<Bucket>(
    db,
    sql`select to_char(b.bucket, 'YYYY-MM-DD') as bucket,
        coalesce(r.n, 0)::int as requests_received, coalesce(o.sent, 0)::int as offers_sent, coalesce(o.accepted, 0)::int as offers_accepted,
        coalesce(a.n, 0)::int as appointments, coalesce(p.revenue, 0)::float8 as revenue_cents
      from ${bucketSeries(unit, period)}
      left join (select bucket, count(*) as n
                   from (select ${bucketOf(unit, serviceRequests.createdAt, zone)} as bucket from ${serviceRequests}
                          where ${received(prestataireId)} and ${within(serviceRequests.createdAt, period)}) x
                  group by bucket) r on r.bucket = b.bucket
      left join (select bucket, count(*) as sent, count(*) filter (where status = 'accepted') as accepted
                   from (select ${bucketOf(unit, offers.createdAt, zone)} as bucket, ${offers.status} as status from ${offers}
                          where ${offers.prestataireId} = ${prestataireId} and ${within(offers.createdAt, period)}) x
                  group by bucket) o on o.bucket = b.bucket
      left join (select bucket, count(*) as n
                   from (select ${bucketOf(unit, appointments.startsAt, zone)} as bucket from ${appointments}
                          where ${appointments.prestataireId} = ${prestataireId} and ${within(appointments.startsAt, period)}) x
                  group by bucket) a on a.bucket = b.bucket
      left join (select bucket, sum(net) as revenue
                   from (select ${bucketOf(unit, payments.paidAt, zone)} as bucket, ${net} as net from ${payments}
                          where ${payments.prestataireId} = ${prestataireId} and ${payments.status} = 'succeeded'
                            and ${within(payments.paidAt, period)}) x
                  group by bucket) p on p.bucket = b.bucket
      order by b.bucket`,
  );
}
