import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Readable } from 'node:stream';
import { parse } from 'csv-parse/sync';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { conversations, payments, prestataireProfiles, reviews, users } from '../src/db/schema/index.js';
import { todayIn } from '../src/lib/time.js';
import { exportStream } from '../src/modules/admin-stats/admin-stats.service.js';
import { lifecycleFixtures, nonAdminTokens } from './admin-lifecycle-fixtures.js';
import {
  bearer,
  buildTestApp,
  createAdmin,
  createClient,
  createPrestataire,
  expectAdminOnly,
  expectError,
  type NonAdminTokens,
  type TestApp,
  type TestUser,
} from './helpers.js';

let t: TestApp;
let admin: TestUser;
let tokens: NonAdminTokens;
let fx: ReturnType<typeof lifecycleFixtures>;
let intent = 0;

beforeAll(async () => {
  t = await buildTestApp({ RATE_LIMIT_AUTHENTICATED: '100000', PLATFORM_TIME_ZONE: 'Europe/Paris' });
  fx = lifecycleFixtures(t);
  admin = await createAdmin(t);
  tokens = await nonAdminTokens(t);
});
afterAll(() => t.close());

function get(url: string, token = admin.token) {
  return t.app.inject({ method: 'GET', url: `/api/v1/admin${url}`, headers: bearer(token) });
}

/** A client, a prestataire, and an appointment between them for `serviceId`, created at `at`. */
async function anAppointment(serviceId: number, at: Date, client: TestUser, prestataire: TestUser, values: { completedAt?: Date } = {}) {
  const vehicle = await fx.vehicle(client.user.id);
  const request = await fx.request({ clientId: client.user.id, vehicleId: vehicle.id, serviceId, status: 'accepted', createdAt: at });
  return fx.appointment({
    serviceRequestId: request.id,
    clientId: client.user.id,
    prestataireId: prestataire.user.id,
    vehicleId: vehicle.id,
    serviceId,
    startsAt: at,
    createdAt: at,
    ...(values.completedAt ? { status: 'completed', completedAt: values.completedAt } : {}),
  });
}

async function aPayment(
  appointment: { id: number; clientId: number; prestataireId: number },
  values: Partial<typeof payments.$inferInsert> & { amountCents: number },
) {
  intent += 1;
  const [row] = await t.database.db
    .insert(payments)
    .values({
      appointmentId: appointment.id,
      clientId: appointment.clientId,
      prestataireId: appointment.prestataireId,
      processor: 'builtin',
      intentId: `pi_stats_${intent}`,
      clientSecret: `secret_${intent}`,
      status: 'succeeded',
      createdAt: values.paidAt ?? new Date(),
      ...values,
    })
    .returning();
  return row!;
}

describe('GET /admin/dashboard', () => {
  it('counts what waits for administrators and today’s volume, today being the platform’s', async () => {
    const before = (await get('/dashboard')).json().data;
    expect(before.today).toMatchObject({ date: todayIn('Europe/Paris'), timezone: 'Europe/Paris' });

    await createPrestataire(t); // pending
    await createPrestataire(t, { status: 'documents_requested' });
    await createPrestataire(t, { status: 'validated' });
    const client = await createClient(t);
    const prestataire = await createPrestataire(t, { status: 'validated' });
    const category = await fx.category();
    const service = await fx.service(category.id);
    const today = await anAppointment(service.id, new Date(), client, prestataire);
    const old = await anAppointment(service.id, new Date(Date.now() - 3 * 86_400_000), client, prestataire);
    await aPayment(today, { amountCents: 10_000, commissionCents: 1_500, paidAt: new Date() });
    await aPayment(old, { amountCents: 7_000, commissionCents: 700, paidAt: new Date(Date.now() - 3 * 86_400_000) });
    await t.database.db.insert(conversations).values([
      { clientId: client.user.id, prestataireId: prestataire.user.id, appointmentId: today.id, disputeStatus: 'open', disputeReportedAt: new Date() },
      { clientId: client.user.id, prestataireId: prestataire.user.id, appointmentId: old.id, disputeStatus: 'resolved' },
    ]);
    await t.database.db.insert(reviews).values([
      { appointmentId: today.id, clientId: client.user.id, prestataireId: prestataire.user.id, rating: 4, comment: 'Bien' },
      { appointmentId: old.id, clientId: client.user.id, prestataireId: prestataire.user.id, rating: 5, comment: 'Parfait', status: 'approved' },
    ]);

    const after = await get('/dashboard');
    expect(after.statusCode).toBe(200);
    const d = after.json().data;
    expect(d.pending_validations - before.pending_validations).toBe(2);
    expect(d.open_disputes - before.open_disputes).toBe(1);
    expect(d.reviews_to_moderate - before.reviews_to_moderate).toBe(1);
    expect(d.today.requests_created - before.today.requests_created).toBe(1);
    expect(d.today.appointments_booked - before.today.appointments_booked).toBe(1);
    expect(d.today.payments_succeeded - before.today.payments_succeeded).toBe(1);
    expect(d.today.volume_cents - before.today.volume_cents).toBe(10_000);
    expect(d.today.commission_cents - before.today.commission_cents).toBe(1_500);
  });

  it('is for administrators only', async () => {
    await expectAdminOnly(t, tokens, 'GET', '/admin/dashboard');
  });
});

describe('GET /admin/stats/*', () => {
  // Paris moves to summer time on 2025-03-30: its local midnight is 23:00 UTC the day before, then
  // 22:00 UTC; a UTC grouping would put these rows in the wrong days.
  const justBefore30 = new Date('2025-03-29T22:59:59Z'); // 23:59:59 on the 29th in Paris
  const at30 = new Date('2025-03-29T23:00:00Z'); // 00:00 on the 30th
  const late30 = new Date('2025-03-30T21:59:59Z'); // 23:59:59 on the 30th (summer time)
  const at31 = new Date('2025-03-30T22:00:00Z'); // 00:00 on the 31st
  let serviceId: number;
  let otherServiceId: number;

  beforeAll(async () => {
    for (const [role, at] of [
      ['client', justBefore30],
      ['client', at30],
      ['client', late30],
      ['prestataire', at31],
      ['client', new Date('2025-04-05T10:00:00Z')],
    ] as const) {
      const n = Math.random().toString(36).slice(2);
      await t.database.db.insert(users).values({ role, email: `dst-${n}@example.test`, firstName: 'Dst', lastName: n, createdAt: at });
    }
    const client = await createClient(t);
    const prestataire = await createPrestataire(t, { status: 'validated' });
    const category = await fx.category();
    serviceId = (await fx.service(category.id)).id;
    otherServiceId = (await fx.service(category.id)).id;
    const a1 = await anAppointment(serviceId, justBefore30, client, prestataire);
    const a2 = await anAppointment(serviceId, at30, client, prestataire, { completedAt: late30 });
    const a3 = await anAppointment(otherServiceId, at31, client, prestataire);
    await aPayment(a1, { amountCents: 10_000, commissionCents: 1_000, paidAt: justBefore30 });
    await aPayment(a2, { amountCents: 20_000, commissionCents: 2_000, paidAt: at30, status: 'partially_refunded', refundedCents: 5_000, refundedAt: at31 });
    await aPayment(a3, { amountCents: 30_000, commissionCents: 3_000, paidAt: late30 });
  });

  const range = 'from=2025-03-29&to=2025-03-31';

  it('overview: the totals of the period', async () => {
    const res = await get(`/stats/overview?${range}`);
    expect(res.statusCode).toBe(200);
    const d = res.json().data;
    expect(d).toMatchObject({ from: '2025-03-29', to: '2025-03-31', group_by: 'day', timezone: 'Europe/Paris' });
    expect(d.totals).toMatchObject({
      new_users: 4,
      new_clients: 3,
      new_prestataires: 1,
      requests: 3,
      appointments: 3,
      completed: 1,
      payments: 3,
      volume_cents: 60_000,
      commission_cents: 6_000,
      refunds_cents: 5_000,
    });
    expect(d.totals.users).toBe(4);
  });

  it('users: new accounts by role per local day, across the change to summer time', async () => {
    const d = (await get(`/stats/users?${range}`)).json().data;
    expect(d.series).toEqual([
      { bucket: '2025-03-29', clients: 1, prestataires: 0, admins: 0 },
      { bucket: '2025-03-30', clients: 2, prestataires: 0, admins: 0 },
      { bucket: '2025-03-31', clients: 0, prestataires: 1, admins: 0 },
    ]);
  });

  it('users by week and month; empty buckets answer 0', async () => {
    const weeks = (await get('/stats/users?from=2025-03-29&to=2025-04-13&group_by=week')).json().data;
    expect(weeks.series).toEqual([
      { bucket: '2025-03-24', clients: 3, prestataires: 0, admins: 0 },
      { bucket: '2025-03-31', clients: 1, prestataires: 1, admins: 0 },
      { bucket: '2025-04-07', clients: 0, prestataires: 0, admins: 0 },
    ]);
    const months = (await get('/stats/users?from=2025-02-01&to=2025-04-30&group_by=month')).json().data;
    expect(months.series.map((b: { bucket: string; clients: number }) => [b.bucket, b.clients])).toEqual([
      ['2025-02-01', 0],
      ['2025-03-01', 3],
      ['2025-04-01', 1],
    ]);
  });

  it('revenue: volume, commission, refunds and net per local day', async () => {
    const d = (await get(`/stats/revenue?${range}`)).json().data;
    expect(d.series).toEqual([
      { bucket: '2025-03-29', payments: 1, volume_cents: 10_000, commission_cents: 1_000, refunds_cents: 0, net_cents: 10_000 },
      { bucket: '2025-03-30', payments: 2, volume_cents: 50_000, commission_cents: 5_000, refunds_cents: 0, net_cents: 50_000 },
      { bucket: '2025-03-31', payments: 0, volume_cents: 0, commission_cents: 0, refunds_cents: 5_000, net_cents: -5_000 },
    ]);
  });

  it('services: requests, appointments and revenue per catalogue service', async () => {
    const rows = (await get(`/stats/services?${range}`)).json().data.rows as { service_id: number }[];
    expect(rows.find((r) => r.service_id === serviceId)).toMatchObject({ requests: 2, appointments: 2, revenue_cents: 30_000 });
    expect(rows.find((r) => r.service_id === otherServiceId)).toMatchObject({ requests: 1, appointments: 1, revenue_cents: 30_000 });
    // A service with nothing in the period still answers, with zeros.
    const quiet = (await get('/stats/services?from=2024-01-01&to=2024-01-31')).json().data.rows as { service_id: number }[];
    expect(quiet.find((r) => r.service_id === serviceId)).toMatchObject({ requests: 0, appointments: 0, revenue_cents: 0 });
  });

  it('defaults to the last 30 days of the platform', async () => {
    const d = (await get('/stats/overview')).json().data;
    expect(d.to).toBe(todayIn('Europe/Paris'));
    expect(Date.parse(d.to) - Date.parse(d.from)).toBe(29 * 86_400_000);
  });

  it('422 on a bad period or grouping', async () => {
    for (const path of ['overview', 'users', 'revenue', 'services']) {
      expectError(await get(`/stats/${path}?from=2025-02-30`), 422, 'validation_error');
      expectError(await get(`/stats/${path}?from=2025-03-31&to=2025-03-01`), 422, 'validation_error');
      expectError(await get(`/stats/${path}?from=2024-01-01&to=2025-01-02`), 422, 'validation_error');
      expectError(await get(`/stats/${path}?group_by=year`), 422, 'validation_error');
    }
    // 366 days is the most a range may cover.
    expect((await get('/stats/overview?from=2024-01-01&to=2024-12-31')).statusCode).toBe(200);
  });

  it('is for administrators only', async () => {
    for (const path of ['overview', 'users', 'revenue', 'services']) await expectAdminOnly(t, tokens, 'GET', `/admin/stats/${path}`);
  });
});

describe('GET /admin/stats/export', () => {
  const COUNT = 4_100; // more than two batches of 2 000

  beforeAll(async () => {
    await t.database.db.execute(sql`
      insert into users (role, email, first_name, last_name, created_at)
      select case when g % 4 = 0 then 'prestataire' else 'client' end, 'export-' || g || '@example.test', 'Export', 'User ' || g,
             '2025-02-01T00:00:00Z'::timestamptz + make_interval(mins => g)
        from generate_series(1, ${COUNT}) g`);
    // Text a spreadsheet would run as a formula, and a comma, a quote and a line break to escape.
    await t.database.db.insert(users).values([
      { role: 'client', email: 'formula@example.test', firstName: '=HYPERLINK("http://evil.test","x")', lastName: '+33 6', createdAt: new Date('2025-02-20T12:00:00Z') },
      { role: 'client', email: 'quote@example.test', firstName: '@SUM(A1)', lastName: 'Dupont, "le grand"\nsuite', createdAt: new Date('2025-02-20T12:00:01Z') },
    ]);
  });

  const exportUrl = (query: string) => `/stats/export?${query}`;

  it('streams the rows as CSV, by id, with formulas neutralised', async () => {
    const res = await get(exportUrl('dataset=users&from=2025-02-01&to=2025-02-28'));
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(res.headers['content-disposition']).toBe('attachment; filename="users-2025-02-01-2025-02-28.csv"');
    const records = parse(res.body, { columns: true }) as Record<string, string>[];
    const expected = await t.database.db
      .select()
      .from(users)
      .where(sql`${users.createdAt} >= '2025-01-31T23:00:00Z' and ${users.createdAt} < '2025-02-28T23:00:00Z'`)
      .orderBy(users.id);
    expect(records).toHaveLength(expected.length);
    expect(records.length).toBeGreaterThan(COUNT);
    expect(Object.keys(records[0]!)).toEqual(['id', 'role', 'status', 'email', 'first_name', 'last_name', 'lang', 'email_verified_at', 'deleted_at', 'created_at']);
    records.forEach((r, i) => {
      const u = expected[i]!;
      const text = (v: string) => (/^[=+\-@]/.test(v) ? `'${v}` : v);
      expect(r).toEqual({
        id: String(u.id),
        role: u.role,
        status: u.status,
        email: u.email,
        first_name: text(u.firstName),
        last_name: text(u.lastName),
        lang: u.lang,
        email_verified_at: u.emailVerifiedAt?.toISOString() ?? '',
        deleted_at: u.deletedAt?.toISOString() ?? '',
        created_at: u.createdAt.toISOString(),
      });
    });
    const formula = records.find((r) => r.email === 'formula@example.test')!;
    expect(formula.first_name).toBe(`'=HYPERLINK("http://evil.test","x")`);
    expect(formula.last_name).toBe(`'+33 6`);
    const quote = records.find((r) => r.email === 'quote@example.test')!;
    expect(quote).toMatchObject({ first_name: `'@SUM(A1)`, last_name: 'Dupont, "le grand"\nsuite' });
  });

  it('streams JSON lines, one object per row', async () => {
    const res = await get(exportUrl('dataset=users&from=2025-02-01&to=2025-02-28&format=jsonl'));
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/x-ndjson; charset=utf-8');
    expect(res.headers['content-disposition']).toBe('attachment; filename="users-2025-02-01-2025-02-28.jsonl"');
    const lines = res.body.split('\n');
    expect(lines.at(-1)).toBe('');
    const rows = lines.slice(0, -1).map((l) => JSON.parse(l) as { id: number; first_name: string; created_at: string });
    expect(rows.length).toBe(COUNT + 2);
    expect(rows.map((r) => r.id)).toEqual([...rows.map((r) => r.id)].sort((a, b) => a - b));
    // JSON needs no formula guard: values come back as they are.
    expect(rows.find((r) => r.first_name.startsWith('=HYPERLINK'))).toBeDefined();
    expect(rows[0]!.created_at).toBe('2025-02-01T00:01:00.000Z');
  });

  it('exports the other datasets, an empty period with just the header', async () => {
    for (const dataset of ['appointments', 'payments', 'service_requests']) {
      const res = await get(exportUrl(`dataset=${dataset}&from=2025-03-29&to=2025-03-31`));
      expect(res.statusCode).toBe(200);
      const records = parse(res.body, { columns: true }) as Record<string, string>[];
      expect(records).toHaveLength(3);
      expect(records.map((r) => Number(r.id))).toEqual([...records.map((r) => Number(r.id))].sort((a, b) => a - b));
    }
    const empty = await get(exportUrl('dataset=payments&from=2020-01-01&to=2020-01-02'));
    expect(empty.body).toBe('id,appointment_id,client_id,prestataire_id,status,amount_cents,commission_cents,refunded_cents,currency,processor,paid_at,refunded_at,created_at\n');
  });

  it('422 before the first byte on bad input', async () => {
    expectError(await get(exportUrl('from=2025-02-01&to=2025-02-28')), 422, 'validation_error');
    expectError(await get(exportUrl('dataset=passwords')), 422, 'validation_error');
    expectError(await get(exportUrl('dataset=users&format=xlsx')), 422, 'validation_error');
    expectError(await get(exportUrl('dataset=users&from=2025-02-28&to=2025-02-01')), 422, 'validation_error');
    expectError(await get(exportUrl('dataset=users&from=2023-01-01&to=2025-01-01')), 422, 'validation_error');
  });

  it('is for administrators only', async () => {
    await expectAdminOnly(t, tokens, 'GET', '/admin/stats/export?dataset=users');
  });

  it('a failure after the first rows destroys the stream rather than leaving it open', async () => {
    async function* failing() {
      yield [
        { id: 1, name: 'a' },
        { id: 2, name: 'b' },
      ];
      // The next batch fails once the first rows have gone out.
      await new Promise((resolve) => setTimeout(resolve, 20));
      throw new Error('connection lost');
    }
    for (const format of ['csv', 'jsonl'] as const) {
      const stream: Readable = exportStream(format, ['id', 'name'], failing());
      const chunks: string[] = [];
      await expect(
        (async () => {
          for await (const chunk of stream) chunks.push(String(chunk));
        })(),
      ).rejects.toThrow('connection lost');
      expect(stream.destroyed).toBe(true);
      // What went out before the failure is a prefix of the file (the CSV side may still have held it).
      const whole = format === 'csv' ? 'id,name\n1,a\n2,b\n' : '{"id":1,"name":"a"}\n{"id":2,"name":"b"}\n';
      expect(whole.startsWith(chunks.join(''))).toBe(true);
    }
  });
});

describe('validation queue figures', () => {
  it('a validated prestataire leaves the pending count', async () => {
    const before = (await get('/dashboard')).json().data.pending_validations;
    const p = await createPrestataire(t);
    expect((await get('/dashboard')).json().data.pending_validations).toBe(before + 1);
    await t.database.db.update(prestataireProfiles).set({ validationStatus: 'validated' }).where(sql`${prestataireProfiles.userId} = ${p.user.id}`);
    expect((await get('/dashboard')).json().data.pending_validations).toBe(before);
  });
});

describe('GET /admin/stats/export over a socket', () => {
  it('a database error after the first byte ends the response instead of leaving it hanging', async () => {
    // Rows long enough (~40 MB in all) that the socket's buffers cannot take them all: the server is
    // still reading batches when the client pauses after its first chunk.
    await t.database.db.execute(sql`
      insert into users (role, email, first_name, last_name, created_at)
      select 'client', 'socket-' || g || '@example.test', 'Socket', repeat('x', 2000), '2024-06-01T00:00:00Z'::timestamptz + make_interval(secs => g)
        from generate_series(1, 20000) g`);
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = t.app.server.address() as AddressInfo;
    let received = 0;
    const outcome = await new Promise<{ status: number | undefined; complete: boolean }>((resolve, reject) => {
      const request = http.get(
        `http://127.0.0.1:${port}/api/v1/admin/stats/export?dataset=users&from=2024-06-01&to=2024-06-02`,
        { headers: bearer(admin.token) },
        (response) => {
          response.once('data', (chunk: Buffer) => {
            received += chunk.length;
            response.pause();
            // The next batch's query fails: its table is gone.
            void t.database.db.execute(sql`alter table users rename to users_away`).then(() => {
              response.on('data', (more: Buffer) => (received += more.length));
              response.resume();
            }, reject);
          });
          response.on('close', () => resolve({ status: response.statusCode, complete: response.complete }));
          response.on('error', () => {});
        },
      );
      request.on('error', () => {});
    });
    await t.database.db.execute(sql`alter table users_away rename to users`);
    expect(outcome.status).toBe(200);
    expect(received).toBeGreaterThan(0);
    expect(outcome.complete).toBe(false);
  }, 30_000);
});
