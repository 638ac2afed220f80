import { envelope } from '@repo/schemas';
import { z } from 'zod';
import { GROUP_BY, MAX_PERIOD_DAYS } from '../../lib/periods.js';
import { isCalendarDate } from '../../lib/time.js';
import { EXPORT_DATASETS } from './admin-stats.repository.js';

const platformDate = z
  .string()
  .max(10)
  .refine(isCalendarDate, 'Must be a date (YYYY-MM-DD)')
  .describe('A calendar day in the platform time zone');

const periodQuery = {
  from: platformDate.optional().describe('First day, included (default 29 days before `to`)'),
  to: platformDate.optional().describe(`Last day, included (default today; at most ${MAX_PERIOD_DAYS} days after \`from\`)`),
};

export const StatsQuery = z.object({
  ...periodQuery,
  group_by: z.enum(GROUP_BY).default('day').describe('The bucket of a series: local days, ISO weeks (from Monday) or months'),
});
export type StatsQuery = z.infer<typeof StatsQuery>;

export const EXPORT_FORMATS = ['csv', 'jsonl'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

export const ExportQuery = z.object({
  dataset: z.enum(EXPORT_DATASETS).describe('The rows to export, those created within the period'),
  ...periodQuery,
  format: z.enum(EXPORT_FORMATS).default('csv').describe('`csv` (a header line, then one line per row) or `jsonl` (one JSON object per line)'),
});
export type ExportQuery = z.infer<typeof ExportQuery>;

const count = z.number().int();
const cents = z.number().int().describe('Integer cents (EUR)');

export const AdminDashboardEnvelope = envelope(
  z.object({
    pending_validations: count.describe('Prestataires waiting for validation (pending or documents requested)'),
    open_disputes: count.describe('Conversations whose dispute is open'),
    reviews_to_moderate: count.describe('Reviews pending moderation'),
    today: z.object({
      date: z.string().describe('Today in the platform time zone'),
      timezone: z.string(),
      requests_created: count,
      appointments_booked: count,
      payments_succeeded: count.describe('Charges that went through today'),
      volume_cents: cents,
      commission_cents: cents,
    }),
  }),
);

const periodFields = {
  from: z.string(),
  to: z.string(),
  group_by: z.enum(GROUP_BY),
  timezone: z.string(),
};

export const OverviewEnvelope = envelope(
  z.object({
    ...periodFields,
    totals: z.object({
      users: count.describe('Accounts existing at the end of the period (not deleted)'),
      new_users: count,
      new_clients: count,
      new_prestataires: count,
      requests: count.describe('Service requests created'),
      appointments: count.describe('Appointments booked'),
      completed: count.describe('Appointments completed'),
      payments: count.describe('Charges that went through'),
      volume_cents: cents,
      commission_cents: cents,
      refunds_cents: cents.describe('Refunds made in the period'),
    }),
  }),
);

export const UsersStatsEnvelope = envelope(
  z.object({
    ...periodFields,
    series: z.array(z.object({ bucket: z.string().describe('First local day of the bucket'), clients: count, prestataires: count, admins: count })),
  }),
);

export const RevenueStatsEnvelope = envelope(
  z.object({
    ...periodFields,
    series: z.array(
      z.object({
        bucket: z.string().describe('First local day of the bucket'),
        payments: count,
        volume_cents: cents.describe('Charges that went through in the bucket'),
        commission_cents: cents,
        refunds_cents: cents.describe('Refunds made in the bucket'),
        net_cents: cents.describe('Volume less refunds'),
      }),
    ),
  }),
);

export const ServicesStatsEnvelope = envelope(
  z.object({
    ...periodFields,
    rows: z.array(
      z.object({
        service_id: z.number().int(),
        slug: z.string(),
        name: z.string(),
        requests: count,
        appointments: count,
        revenue_cents: cents.describe("Charges that went through for the service's appointments"),
      }),
    ),
  }),
);
