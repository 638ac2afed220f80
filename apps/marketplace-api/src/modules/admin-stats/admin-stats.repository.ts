import { queryRows, timestamptz, withTransaction } from '@repo/db';
import { sql, type SQL } from 'drizzle-orm';
import type { AnyPgColumn } from 'drizzle-orm/pg-core';
import type { DbTx } from '../../db/index.js';
import {
  appointments,
  conversations,
  payments,
  prestataireProfiles,
  reviews,
  serviceRequests,
  services,
  users,
} from '../../db/schema/index.js';
import type { GroupBy, Period } from '../../lib/periods.js';

// ---- buckets --------------------------------------------------------------------------------------
// A series is a generate_series of local bucket starts (timestamps without zone) left-joined to
// per-bucket aggregates, so an empty bucket answers 0. The unit is one of three literals, written in
// the statement (a bound parameter would make the grouping expression differ from the selected one).

const UNITS: Record<GroupBy, SQL> = { day: sql.raw(`'day'`), week: sql.raw(`'week'`), month: sql.raw(`'month'`) };

/** The local bucket an instant falls in: `date_trunc(unit, ts at time zone zone)`. */
export function bucketOf(unit: GroupBy, ts: AnyPgColumn | SQL, zone: string): SQL {
  return sql`date_trunc(${UNITS[unit]}, ${ts} at time zone ${zone})`;
}

/** `b(bucket)`: every bucket start from the one holding `from` to the one holding `to` (local days). */
export function bucketSeries(unit: GroupBy, period: Pick<Period, 'from' | 'to'>): SQL {
  return sql`generate_series(date_trunc(${UNITS[unit]}, ${period.from}::timestamp), date_trunc(${UNITS[unit]}, ${period.to}::timestamp),
    ('1 ' || ${UNITS[unit]})::interval) as b(bucket)`;
}

/** `ts` within the period's instants (half-open). */
export function within(ts: AnyPgColumn, period: Pick<Period, 'start' | 'end'>): SQL {
  return sql`${ts} >= ${timestamptz(period.start)} and ${ts} < ${timestamptz(period.end)}`;
}

// ---- the admin dashboard --------------------------------------------------------------------------

export interface DashboardRow extends Record<string, unknown> {
  pending_validations: number;
  open_disputes: number;
  reviews_to_moderate: number;
  requests_created: number;
  appointments_booked: number;
  payments_succeeded: number;
  volume_cents: number;
  commission_cents: number;
}

/**
 * The dashboard in one round trip: each sub-select reads an index (profiles by validation status,
 * conversations_disputes_idx, reviews_status_created_idx, the created_at indexes of requests and
 * appointments, payments_paid_idx), so its cost does not grow with the tables.
 */
export async function dashboard(db: DbTx, today: Pick<Period, 'start' | 'end'>): Promise<DashboardRow> {
  const [row] = await queryRows<DashboardRow>(
    db,
    sql`select
      (select count(*)::int from ${prestataireProfiles}
        where ${prestataireProfiles.validationStatus} in ('pending', 'documents_requested')) as pending_validations,
      (select count(*)::int from ${conversations} where ${conversations.disputeStatus} = 'open') as open_disputes,
      (select count(*)::int from ${reviews} where ${reviews.status} = 'pending') as reviews_to_moderate,
      (select count(*)::int from ${serviceRequests} where ${within(serviceRequests.createdAt, today)}) as requests_created,
      (select count(*)::int from ${appointments} where ${within(appointments.createdAt, today)}) as appointments_booked,
      p.n as payments_succeeded, p.volume as volume_cents, p.commission as commission_cents
    from (select count(*)::int as n, coalesce(sum(${payments.amountCents}), 0)::float8 as volume,
                 coalesce(sum(${payments.commissionCents}), 0)::float8 as commission
            from ${payments} where ${within(payments.paidAt, today)}) p`,
  );
  return row!;
}

// ---- statistics -----------------------------------------------------------------------------------

export interface OverviewRow extends Record<string, unknown> {
  users: number;
  new_users: number;
  new_clients: number;
  new_prestataires: number;
  requests: number;
  appointments: number;
  completed: number;
  payments: number;
  volume_cents: number;
  commission_cents: number;
  refunds_cents: number;
}

/** Totals of a period: accounts existing at its end and those created in it, lifecycle and money. */
export async function overview(db: DbTx, period: Period): Promise<OverviewRow> {
  const [row] = await queryRows<OverviewRow>(
    db,
    sql`select
      (select count(*)::int from ${users} where ${users.createdAt} < ${timestamptz(period.end)} and ${users.deletedAt} is null) as users,
      u.total as new_users, u.clients as new_clients, u.prestataires as new_prestataires,
      (select count(*)::int from ${serviceRequests} where ${within(serviceRequests.createdAt, period)}) as requests,
      (select count(*)::int from ${appointments} where ${within(appointments.createdAt, period)}) as appointments,
      (select count(*)::int from ${appointments} where ${within(appointments.completedAt, period)}) as completed,
      p.n as payments, p.volume as volume_cents, p.commission as commission_cents,
      (select coalesce(sum(${payments.refundedCents}), 0)::float8 from ${payments} where ${within(payments.refundedAt, period)}) as refunds_cents
    from (select count(*)::int as total,
                 (count(*) filter (where ${users.role} = 'client'))::int as clients,
                 (count(*) filter (where ${users.role} = 'prestataire'))::int as prestataires
            from ${users} where ${within(users.createdAt, period)}) u,
         (select count(*)::int as n, coalesce(sum(${payments.amountCents}), 0)::float8 as volume,
                 coalesce(sum(${payments.commissionCents}), 0)::float8 as commission
            from ${payments} where ${within(payments.paidAt, period)}) p`,
  );
  return row!;
}

export interface UsersBucket extends Record<string, unknown> {
  bucket: string;
  clients: number;
  prestataires: number;
  admins: number;
}

/** New accounts by role per bucket. */
export function usersSeries(db: DbTx, period: Period, unit: GroupBy): Promise<UsersBucket[]> {
  return queryRows<UsersBucket>(
    db,
    sql`select to_char(b.bucket, 'YYYY-MM-DD') as bucket,
        coalesce(u.clients, 0)::int as clients, coalesce(u.prestataires, 0)::int as prestataires, coalesce(u.admins, 0)::int as admins
      from ${bucketSeries(unit, period)}
      left join (
        select bucket, count(*) filter (where role = 'client') as clients, count(*) filter (where role = 'prestataire') as prestataires,
               count(*) filter (where role = 'admin') as admins
          from (select ${bucketOf(unit, users.createdAt, period.zone)} as bucket, ${users.role} as role
                  from ${users} where ${within(users.createdAt, period)}) x
         group by bucket
      ) u on u.bucket = b.bucket
      order by b.bucket`,
  );
}

export interface RevenueBucket extends Record<string, unknown> {
  bucket: string;
  payments: number;
  volume_cents: number;
  commission_cents: number;
  refunds_cents: number;
}

/** Money per bucket: charges by the day they went through, refunds by the day they were made. */
export function revenueSeries(db: DbTx, period: Period, unit: GroupBy): Promise<RevenueBucket[]> {
  return queryRows<RevenueBucket>(
    db,
    sql`select to_char(b.bucket, 'YYYY-MM-DD') as bucket, coalesce(p.n, 0)::int as payments,
        coalesce(p.volume, 0)::float8 as volume_cents, coalesce(p.commission, 0)::float8 as commission_cents,
        coalesce(r.refunds, 0)::float8 as refunds_cents
      from ${bucketSeries(unit, period)}
      left join (
        select bucket, count(*) as n, sum(amount) as volume, sum(commission) as commission
          from (select ${bucketOf(unit, payments.paidAt, period.zone)} as bucket, ${payments.amountCents} as amount,
                       ${payments.commissionCents} as commission
                  from ${payments} where ${within(payments.paidAt, period)}) x
         group by bucket
      ) p on p.bucket = b.bucket
      left join (
        select bucket, sum(refunded) as refunds
          from (select ${bucketOf(unit, payments.refundedAt, period.zone)} as bucket, ${payments.refundedCents} as refunded
                  from ${payments} where ${within(payments.refundedAt, period)}) x
         group by bucket
      ) r on r.bucket = b.bucket
      order by b.bucket`,
  );
}

export interface ServiceRow extends Record<string, unknown> {
  service_id: number;
  slug: string;
  name: string;
  requests: number;
  appointments: number;
  revenue_cents: number;
}

/** Per catalogue service: requests and appointments created in the period, payments made in it. */
export function servicesRows(db: DbTx, period: Period): Promise<ServiceRow[]> {
  return queryRows<ServiceRow>(
    db,
    sql`select s.id as service_id, s.slug, s.name,
        coalesce(r.n, 0)::int as requests, coalesce(a.n, 0)::int as appointments, coalesce(p.revenue, 0)::float8 as revenue_cents
      from ${services} s
      left join (select ${serviceRequests.serviceId} as service_id, count(*) as n from ${serviceRequests}
                  where ${within(serviceRequests.createdAt, period)} group by 1) r on r.service_id = s.id
      left join (select ${appointments.serviceId} as service_id, count(*) as n from ${appointments}
                  where ${within(appointments.createdAt, period)} group by 1) a on a.service_id = s.id
      left join (select ${appointments.serviceId} as service_id, sum(${payments.amountCents}) as revenue
                   from ${payments} join ${appointments} on ${appointments.id} = ${payments.appointmentId}
                  where ${within(payments.paidAt, period)} group by 1) p on p.service_id = s.id
      order by coalesce(p.revenue, 0) desc, coalesce(r.n, 0) desc, s.id`,
  );
}

// ---- export ---------------------------------------------------------------------------------------

const exportColumns = {
  appointments: {
    id: appointments.id,
    service_request_id: appointments.serviceRequestId,
    client_id: appointments.clientId,
    prestataire_id: appointments.prestataireId,
    service_id: appointments.serviceId,
    status: appointments.status,
    starts_at: appointments.startsAt,
    ends_at: appointments.endsAt,
    price_cents: appointments.priceCents,
    currency: appointments.currency,
    completed_at: appointments.completedAt,
    paid_at: appointments.paidAt,
    cancelled_at: appointments.cancelledAt,
    cancel_reason: appointments.cancelReason,
    created_at: appointments.createdAt,
  },
  payments: {
    id: payments.id,
    appointment_id: payments.appointmentId,
    client_id: payments.clientId,
    prestataire_id: payments.prestataireId,
    status: payments.status,
    amount_cents: payments.amountCents,
    commission_cents: payments.commissionCents,
    refunded_cents: payments.refundedCents,
    currency: payments.currency,
    processor: payments.processor,
    paid_at: payments.paidAt,
    refunded_at: payments.refundedAt,
    created_at: payments.createdAt,
  },
  users: {
    id: users.id,
    role: users.role,
    status: users.status,
    email: users.email,
    first_name: users.firstName,
    last_name: users.lastName,
    lang: users.lang,
    email_verified_at: users.emailVerifiedAt,
    deleted_at: users.deletedAt,
    created_at: users.createdAt,
  },
  service_requests: {
    id: serviceRequests.id,
    client_id: serviceRequests.clientId,
    service_id: serviceRequests.serviceId,
    prestataire_id: serviceRequests.prestataireId,
    city_id: serviceRequests.cityId,
    status: serviceRequests.status,
    description: serviceRequests.description,
    expires_at: serviceRequests.expiresAt,
    accepted_at: serviceRequests.acceptedAt,
    cancelled_at: serviceRequests.cancelledAt,
    created_at: serviceRequests.createdAt,
  },
} as const;

export type ExportDataset = keyof typeof exportColumns;
export const EXPORT_DATASETS = Object.keys(exportColumns) as ExportDataset[];
/** The columns of each dataset, in file order. */
export const exportHeaders = Object.fromEntries(
  EXPORT_DATASETS.map((d) => [d, Object.keys(exportColumns[d])]),
) as Record<ExportDataset, string[]>;

const exportTables = { appointments, payments, users, service_requests: serviceRequests } as const;

export type ExportRow = Record<string, string | number | null>;

/**
 * Each dataset's select list. Instants are formatted by PostgreSQL (ISO 8601, UTC, milliseconds):
 * an export of 100 000 rows would otherwise build and format half a million Date objects in Node.
 */
const exportSelects = Object.fromEntries(
  EXPORT_DATASETS.map((dataset) => [
    dataset,
    sql.join(
      Object.entries(exportColumns[dataset]).map(([name, column]) => {
        const value =
          column.columnType === 'PgTimestamp' ? sql`to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')` : sql`${column}`;
        return sql`${value} as ${sql.identifier(name)}`;
      }),
      sql`, `,
    ),
  ]),
) as Record<ExportDataset, SQL>;

/**
 * One batch of a dataset's rows created in the period, after `afterId` by id (keyset: each batch
 * reads the primary key from where the last one stopped, never an offset). Planned for its values:
 * the generic plan of a prepared statement guesses a range of creation times holds few rows, reads
 * them all through the creation-time index and sorts them by id — for every batch, so an export of
 * a busy period slowed down with its square (200 000 rows at 5 000 rows/s). Planned for the
 * values, a batch walks the primary key and stops at its limit.
 */
export function exportBatch(db: DbTx, dataset: ExportDataset, period: Pick<Period, 'start' | 'end'>, afterId: number, limit: number): Promise<ExportRow[]> {
  const table = exportTables[dataset];
  return withTransaction(db, async (tx) => {
    await tx.execute(sql`set local plan_cache_mode = force_custom_plan`);
    return queryRows<ExportRow>(
      tx,
      sql`select ${exportSelects[dataset]} from ${table}
        where ${table.id} > ${afterId} and ${within(table.createdAt, period)}
        order by ${table.id} limit ${limit}`,
    );
  });
}
