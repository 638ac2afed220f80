import { envelope } from '@repo/schemas';
import { z } from 'zod';
import { APPOINTMENT_STATUSES } from '../../db/schema/index.js';
import { GROUP_BY, MAX_PERIOD_DAYS } from '../../lib/periods.js';
import { isCalendarDate } from '../../lib/time.js';

const localDate = z
  .string()
  .max(10)
  .refine(isCalendarDate, 'Must be a date (YYYY-MM-DD)')
  .describe("A calendar day in the prestataire's time zone");

export const DashboardQuery = z.object({
  from: localDate.optional().describe('First day, included (default 29 days before `to`)'),
  to: localDate.optional().describe(`Last day, included (default today; at most ${MAX_PERIOD_DAYS} days after \`from\`)`),
});
export type DashboardQuery = z.infer<typeof DashboardQuery>;

export const StatsQuery = DashboardQuery.extend({
  group_by: z.enum(GROUP_BY).default('day').describe('The bucket of the series: local days, ISO weeks (from Monday) or months'),
});
export type StatsQuery = z.infer<typeof StatsQuery>;

const count = z.number().int();
const cents = z.number().int().describe('Integer cents (EUR)');

const Totals = z.object({
  requests_received: count.describe('Requests created in the period that were aimed at it or that it made an offer on'),
  offers_sent: count.describe('Offers it made in the period'),
  offers_accepted: count.describe('Of those, the ones accepted'),
  conversion: z.number().nullable().describe('offers_accepted / offers_sent (null without offers)'),
  revenue_cents: cents.describe('Its net share (amount less commission) of the succeeded payments made in the period'),
  appointments: z.object(Object.fromEntries(APPOINTMENT_STATUSES.map((s) => [s, count])) as Record<(typeof APPOINTMENT_STATUSES)[number], typeof count>)
    .describe('Its appointments starting in the period, by status'),
  rating: z.object({ average: z.number().nullable(), count }),
});

const Frame = {
  from: z.string(),
  to: z.string(),
  timezone: z.string().describe("The prestataire's time zone, in which the days are counted"),
};

export const DashboardEnvelope = envelope(z.object({ ...Frame, totals: Totals }));

export const StatsEnvelope = envelope(
  z.object({
    ...Frame,
    group_by: z.enum(GROUP_BY),
    totals: Totals,
    series: z.array(
      z.object({
        bucket: z.string().describe('First local day of the bucket'),
        requests_received: count,
        offers_sent: count,
        offers_accepted: count,
        appointments: count.describe('Appointments starting in the bucket'),
        revenue_cents: cents,
      }),
    ),
  }),
);
