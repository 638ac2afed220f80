// The marketplace's lifecycle data set and figures for `pnpm bench` (issue: provider workspace and
// lifecycle): validated prestataires with weekly hours and services across France, live service
// requests, and appointments (each behind its own accepted request), written with set-based SQL.
// Sizes: BENCH_PRESTATAIRES (10 000), BENCH_REQUESTS (50 000 open or quoted), BENCH_APPOINTMENTS
// (200 000), BENCH_CLIENTS (5 000), BENCH_ACCEPTS (200 offers accepted through the API).
import { createRequire } from 'node:module';
import { DateTime } from 'luxon';

const postgres = createRequire(new URL('../../../packages/db/package.json', import.meta.url))('postgres');

export const sizes = {
  prestataires: Number(process.env.BENCH_PRESTATAIRES ?? 10_000),
  requests: Number(process.env.BENCH_REQUESTS ?? 50_000),
  appointments: Number(process.env.BENCH_APPOINTMENTS ?? 200_000),
  clients: Number(process.env.BENCH_CLIENTS ?? 5_000),
  accepts: Number(process.env.BENCH_ACCEPTS ?? 200),
};

/**
 * Writes the data set; `benchClientId` (an account registered through the API, whose token the bench
 * holds) is one of the clients, with its share of requests and appointments. Answers what the
 * measurements need: prestataire ids and the points and services to search by.
 */
export async function seedLifecycle(databaseUrl, benchClientId, n = sizes) {
  const sql = postgres(databaseUrl, { max: 2, onnotice: () => {}, connection: { search_path: '"marketplace", public' } });
  try {
    const tag = Date.now().toString(36);
    const serviceIds = (await sql`select id from services where active order by id`).map((r) => r.id);
    if (serviceIds.length === 0) throw new Error('no services: the reference data was not seeded');

    const prestataires = await sql`
      insert into users (role, email, first_name, last_name, email_verified_at)
      select 'prestataire', 'bench-p' || g || '-' || ${tag} || '@example.test', 'Bench', 'Garage ' || g, now()
        from generate_series(1, ${n.prestataires}) g
      returning id`;
    const pIds = prestataires.map((r) => r.id);
    await sql`
      insert into prestataire_profiles (user_id, business_name, siret, address, postal_code, city, latitude, longitude,
                                        service_radius_km, validation_status, validated_at)
      select id, 'Garage bench ' || ord, lpad((ord + 900000000)::text || ${tag.slice(-4).replace(/\D/g, '0')}, 14, '0'),
             '1 rue du Bench', '69002', 'Ville ' || ord,
             43.5 + random() * 6, -1 + random() * 8, 40, 'validated', now()
        from unnest(${pIds}::int[]) with ordinality as p(id, ord)`;
    await sql`
      insert into availabilities (prestataire_id, day_of_week, start_time, end_time)
      select p.id, d, h.s::time, h.e::time
        from unnest(${pIds}::int[]) as p(id), generate_series(1, 6) d,
             (values ('08:00', '12:00'), ('14:00', '18:00')) as h(s, e)`;
    await sql`
      insert into prestataire_services (prestataire_id, service_id, price_cents, duration_minutes)
      select p.id, (${serviceIds}::int[])[1 + ((p.ord + k * 7) % ${serviceIds.length})], 5000 + k * 1000, 60
        from unnest(${pIds}::int[]) with ordinality as p(id, ord), generate_series(0, 2) k
      on conflict do nothing`;

    const clients = await sql`
      insert into users (role, email, first_name, last_name, email_verified_at)
      select 'client', 'bench-c' || g || '-' || ${tag} || '@example.test', 'Bench', 'Client ' || g, now()
        from generate_series(1, ${n.clients}) g
      returning id`;
    const cIds = [benchClientId, ...clients.map((r) => r.id)];
    const vehicles = await sql`
      insert into vehicles (owner_id, make, model, year)
      select c, 'Renault', 'Clio', 2019 from unnest(${cIds}::int[]) c
      returning id, owner_id`;
    const vehicleOf = new Map(vehicles.map((v) => [v.owner_id, v.id]));
    const vIds = cIds.map((c) => vehicleOf.get(c));

    // Live requests: open or quoted, spread over France.
    await sql`
      insert into service_requests (client_id, vehicle_id, service_id, description, latitude, longitude, status, expires_at)
      select (${cIds}::int[])[1 + g % ${cIds.length}], (${vIds}::int[])[1 + g % ${cIds.length}],
             (${serviceIds}::int[])[1 + g % ${serviceIds.length}], 'Bench request ' || g,
             43.5 + random() * 6, -1 + random() * 8, case when g % 3 = 0 then 'quoted' else 'open' end,
             now() + interval '14 days'
        from generate_series(1, ${n.requests}) g`;

    // Appointments, each behind an accepted (or completed) request: per prestataire one a day at
    // 09:00 UTC, from ten days ago on; the past ones completed.
    const perPrestataire = Math.ceil(n.appointments / n.prestataires);
    await sql`
      with a as (
        select g, (${pIds}::int[])[1 + g % ${pIds.length}] as prestataire_id, (g / ${pIds.length}) as k,
               1 + g % ${cIds.length} as c
          from generate_series(0, ${n.appointments - 1}) g
      ), r as (
        insert into service_requests (client_id, vehicle_id, service_id, prestataire_id, description, latitude, longitude, status, expires_at, accepted_at)
        select (${cIds}::int[])[c], (${vIds}::int[])[c], (${serviceIds}::int[])[1 + g % ${serviceIds.length}], prestataire_id,
               'Bench appointment ' || g, 45.75, 4.83,
               case when k < 10 then 'completed' else 'accepted' end, now(), now()
          from a
        returning id, client_id, vehicle_id, service_id, prestataire_id, description
      )
      insert into appointments (service_request_id, client_id, prestataire_id, vehicle_id, service_id, starts_at, ends_at, price_cents, status, completed_at)
      select r.id, r.client_id, r.prestataire_id, r.vehicle_id, r.service_id,
             date_trunc('day', now()) + make_interval(days => a.k - 10, hours => 9),
             date_trunc('day', now()) + make_interval(days => a.k - 10, hours => 10),
             8000, case when a.k < 10 then 'completed' else 'scheduled' end,
             case when a.k < 10 then now() end
        from r join a on r.description = 'Bench appointment ' || a.g`;
    await sql`analyze`;
    return { prestataireIds: pIds, serviceIds, perPrestataire, sql };
  } catch (error) {
    await sql.end({ timeout: 5 });
    throw error;
  }
}

/**
 * Offers waiting for the bench client's answer: one per request of its own, each by another
 * prestataire, at 14:00 Paris time on a weekday three to five weeks ahead (inside the hours, clear
 * of the seeded appointments).
 */
export async function seedOffers(sql, benchClientId, prestataireIds, serviceIds, count) {
  const [vehicle] = await sql`select id from vehicles where owner_id = ${benchClientId} limit 1`;
  const offers = [];
  let day = DateTime.now().setZone('Europe/Paris').plus({ weeks: 3 }).startOf('day');
  for (let i = 0; i < count; i++) {
    while (day.weekday === 7) day = day.plus({ days: 1 });
    const prestataireId = prestataireIds[i % prestataireIds.length];
    const startsAt = day.set({ hour: 14 }).toJSDate();
    const [request] = await sql`
      insert into service_requests (client_id, vehicle_id, service_id, description, latitude, longitude, status, expires_at)
      values (${benchClientId}, ${vehicle.id}, ${serviceIds[i % serviceIds.length]}, 'Bench accept ' || ${i}, 45.75, 4.83, 'quoted', now() + interval '14 days')
      returning id`;
    const [offer] = await sql`
      insert into offers (service_request_id, prestataire_id, amount_cents, proposed_start_at, duration_minutes, valid_until)
      values (${request.id}, ${prestataireId}, 9000, ${startsAt}, 60, now() + interval '7 days')
      returning id`;
    offers.push(offer.id);
    if (i % prestataireIds.length === prestataireIds.length - 1) day = day.plus({ days: 1 });
  }
  return offers;
}

/** The p95 and p50 of `tasks` run `concurrency` at a time, in ms; every task must succeed. */
export async function timeEach(tasks, concurrency = 10) {
  const times = [];
  let next = 0;
  async function worker() {
    while (next < tasks.length) {
      const task = tasks[next++];
      const start = performance.now();
      await task();
      times.push(performance.now() - start);
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker));
  times.sort((a, b) => a - b);
  const at = (q) => times[Math.min(times.length - 1, Math.floor(q * times.length))];
  return { p50: at(0.5), p95: at(0.95), count: times.length };
}
