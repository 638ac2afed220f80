import type { FastifyPluginAsyncZod } from '@repo/http';
import { errorResponses } from '@repo/schemas';
import { z } from 'zod';
import { actorOf } from '../../lib/context.js';
import type { AdminStatsService } from './admin-stats.service.js';
import {
  AdminDashboardEnvelope,
  ExportQuery,
  OverviewEnvelope,
  RevenueStatsEnvelope,
  ServicesStatsEnvelope,
  StatsQuery,
  UsersStatsEnvelope,
} from './admin-stats.schemas.js';

const PERIOD_RULES =
  'Days are those of the platform time zone; the range is at most 366 days (default the last 30), buckets with nothing answer 0.';

/** The administrators' dashboard, statistics and exports. */
export function adminStatsRoutes(deps: { adminStats: AdminStatsService }): FastifyPluginAsyncZod {
  return async (app) => {
    const adminOnly = app.auth.requireRole('admin');
    const security = [{ bearerAuth: [] }];
    const service = deps.adminStats;

    app.get(
      '/admin/dashboard',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminDashboard',
          tags: ['admin'],
          summary: "What waits for administrators (validations, disputes, reviews) and today's volume and revenue (platform time zone)",
          security,
          response: { 200: AdminDashboardEnvelope, ...errorResponses(401, 403, 429) },
        },
      },
      async (request) => {
        const { row, today, timezone } = await service.dashboard(actorOf(request));
        return {
          data: {
            pending_validations: row.pending_validations,
            open_disputes: row.open_disputes,
            reviews_to_moderate: row.reviews_to_moderate,
            today: {
              date: today,
              timezone,
              requests_created: row.requests_created,
              appointments_booked: row.appointments_booked,
              payments_succeeded: row.payments_succeeded,
              volume_cents: row.volume_cents,
              commission_cents: row.commission_cents,
            },
          },
        };
      },
    );

    app.get(
      '/admin/stats/overview',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminStatsOverview',
          tags: ['admin'],
          summary: 'Totals of a period: accounts, requests, appointments, payments, commission, refunds',
          description: PERIOD_RULES,
          security,
          querystring: StatsQuery,
          response: { 200: OverviewEnvelope, ...errorResponses(401, 403, 422, 429) },
        },
      },
      async (request) => ({ data: await service.overview(actorOf(request), request.query) }),
    );

    app.get(
      '/admin/stats/users',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminStatsUsers',
          tags: ['admin'],
          summary: 'New accounts by role per day, week or month',
          description: PERIOD_RULES,
          security,
          querystring: StatsQuery,
          response: { 200: UsersStatsEnvelope, ...errorResponses(401, 403, 422, 429) },
        },
      },
      async (request) => ({ data: await service.users(actorOf(request), request.query) }),
    );

    app.get(
      '/admin/stats/revenue',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminStatsRevenue',
          tags: ['admin'],
          summary: 'Payment volume, commission, refunds and net per day, week or month',
          description: PERIOD_RULES,
          security,
          querystring: StatsQuery,
          response: { 200: RevenueStatsEnvelope, ...errorResponses(401, 403, 422, 429) },
        },
      },
      async (request) => ({ data: await service.revenue(actorOf(request), request.query) }),
    );

    app.get(
      '/admin/stats/services',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminStatsServices',
          tags: ['admin'],
          summary: 'Requests, appointments and revenue per catalogue service',
          description: PERIOD_RULES,
          security,
          querystring: StatsQuery,
          response: { 200: ServicesStatsEnvelope, ...errorResponses(401, 403, 422, 429) },
        },
      },
      async (request) => ({ data: await service.services(actorOf(request), request.query) }),
    );

    app.get(
      '/admin/stats/export',
      {
        onRequest: adminOnly,
        schema: {
          operationId: 'adminStatsExport',
          tags: ['admin'],
          summary: 'A dataset (appointments, payments, users, service requests) created in a period, streamed as CSV or JSON lines',
          description: `${PERIOD_RULES} Text cells beginning with = + - @ are prefixed with ' (CSV injection).`,
          security,
          querystring: ExportQuery,
          produces: ['text/csv', 'application/x-ndjson'],
          response: { 200: z.any().describe('The file, streamed'), ...errorResponses(401, 403, 422, 429) },
        },
      },
      async (request, reply) => {
        const { filename, contentType, stream } = await service.export(actorOf(request), request.query);
        return reply
          .header('content-type', contentType)
          .header('content-disposition', `attachment; filename="${filename}"`)
          .header('cache-control', 'private, no-store')
          .send(stream);
      },
    );
  };
}
