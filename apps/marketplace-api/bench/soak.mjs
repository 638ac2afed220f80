// The marketplace's soak for `pnpm bench` (scripts/bench-soak.mjs runs it): accounts made through the
// API — SOAK_CLIENTS clients with a vehicle each, SOAK_PRESTATAIRES validated prestataires near Lyon,
// open every day, offering one service — then SOAK_SECONDS of the common authenticated reads (the
// caller's vehicles, profile, appointments, requests, conversations, notifications; the
// prestataire's requests; the public search, slots and services) at SOAK_RATE requests/s, and
// SOAK_FLOW_RATE write flows a second: a client asks, a prestataire quotes, the client accepts, then
// they exchange messages about the appointment.
import { createRequire } from 'node:module';

const postgres = createRequire(new URL('../../../packages/db/package.json', import.meta.url))('postgres');

const PASSWORD = 'bench-password-1234';
const LYON = { latitude: 45.76, longitude: 4.83 };
const HOUR_MS = 3_600_000;

export const soakSizes = {
  clients: Number(process.env.SOAK_CLIENTS ?? 4),
  prestataires: Number(process.env.SOAK_PRESTATAIRES ?? 4),
};

/** A SIRET unique to this run: 13 digits and their Luhn key (every second digit from the key's left doubled). */
export function siret(n) {
  const body = `73282932${String(n % 100_000).padStart(5, '0')}`;
  const sum = [...body].reverse().reduce((total, digit, i) => {
    const d = Number(digit) * (i % 2 === 0 ? 2 : 1);
    return total + (d > 9 ? d - 9 : d);
  }, 0);
  return `${body}${(10 - (sum % 10)) % 10}`;
}

/**
 * The soak's accounts, made through the API; an administrator (registered, then given the role in
 * the database, as the statistics figures do) validates the prestataires.
 */
export async function setupSoak(call, databaseUrl) {
  const tag = `${Date.now().toString(36)}`;
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {}, connection: { search_path: '"marketplace", public' } });
  try {
    const admin = await call('POST', '/api/v1/auth/register/client', {
      body: { first_name: 'Soak', last_name: 'Admin', email: `soak-admin-${tag}@example.test`, password: PASSWORD, password_confirmation: PASSWORD },
    });
    await sql`update users set role = 'admin' where id = ${admin.data.user.id}`;
    const adminToken = admin.data.token;
    const service = (await call('GET', '/api/v1/services?per_page=100')).data[0];
    if (!service) throw new Error('no services: the reference data was not seeded');

    const prestataires = [];
    const first = Date.now() % 90_000;
    for (let i = 0; i < soakSizes.prestataires; i++) {
      const registered = await call('POST', '/api/v1/auth/register/prestataire', {
        body: {
          first_name: 'Soak',
          last_name: `Garage ${i + 1}`,
          email: `soak-p${i + 1}-${tag}@example.test`,
          password: PASSWORD,
          password_confirmation: PASSWORD,
          business_name: `Garage soak ${i + 1} ${tag}`,
          siret: siret(first + i),
          address: '3 place Bellecour',
          postal_code: '69002',
          city: 'Lyon',
          latitude: LYON.latitude + i * 0.002,
          longitude: LYON.longitude,
        },
      });
      const token = registered.data.token;
      const id = registered.data.user.id;
      await call('PUT', '/api/v1/prestataire/profile', { token, body: { timezone: 'Europe/Paris', service_radius_km: 30 } });
      await call('POST', `/api/v1/admin/prestataires/${id}/validate`, { token: adminToken, body: {} });
      await call('PUT', '/api/v1/prestataire/availabilities', {
        token,
        body: { availabilities: [1, 2, 3, 4, 5, 6, 7].map((d) => ({ day_of_week: d, start_time: '00:00', end_time: '24:00' })) },
      });
      await call('PUT', '/api/v1/prestataire/services', { token, body: { services: [{ service_id: service.id, price_cents: 8900, duration_minutes: 60 }] } });
      prestataires.push({ id, token });
    }

    const clients = [];
    for (let i = 0; i < soakSizes.clients; i++) {
      const registered = await call('POST', '/api/v1/auth/register/client', {
        body: { first_name: 'Soak', last_name: `Client ${i + 1}`, email: `soak-c${i + 1}-${tag}@example.test`, password: PASSWORD, password_confirmation: PASSWORD },
      });
      const token = registered.data.token;
      const vehicle = await call('POST', '/api/v1/vehicles', { token, body: { make: 'Renault', model: 'Clio', year: 2019, fuel: 'diesel', mileage: 84_000 } });
      clients.push({ id: registered.data.user.id, token, vehicleId: vehicle.data.id });
    }
    return { service, prestataires, clients };
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/** The reads, by weight, each as a client, a prestataire or nobody would ask. */
export function soakCases({ service, prestataires, clients }) {
  const any = (list) => list[Math.floor(Math.random() * list.length)];
  const asClient = () => ({ authorization: `Bearer ${any(clients).token}` });
  const asPrestataire = () => ({ authorization: `Bearer ${any(prestataires).token}` });
  // Each case's headers are drawn afresh for every request (a getter), so the callers vary.
  const read = (label, weight, path, who) => ({
    label,
    weight,
    method: 'GET',
    path: typeof path === 'function' ? path : () => path,
    get headers() {
      return who ? who() : {};
    },
  });
  const search = `/api/v1/prestataires?latitude=${LYON.latitude}&longitude=${LYON.longitude}&radius_km=30&service_id=${service.id}&sort=distance`;
  return [
    read('GET /vehicles', 10, '/api/v1/vehicles', asClient),
    read('GET /auth/me', 10, '/api/v1/auth/me', () => any([asClient, asPrestataire])()),
    read('GET /appointments (client)', 12, '/api/v1/appointments', asClient),
    read('GET /appointments (prestataire)', 8, '/api/v1/appointments', asPrestataire),
    read('GET /client/requests', 10, '/api/v1/client/requests', asClient),
    read('GET /prestataire/requests', 10, '/api/v1/prestataire/requests', asPrestataire),
    read('GET /conversations', 10, '/api/v1/conversations', () => any([asClient, asPrestataire])()),
    read('GET /notifications', 8, '/api/v1/notifications', asClient),
    read('GET /prestataires (search)', 8, search),
    read('GET /prestataires/{id}/availability/upcoming', 6, () => `/api/v1/prestataires/${any(prestataires).id}/availability/upcoming?days=14&service_id=${service.id}`),
    read('GET /services', 4, '/api/v1/services'),
    read('GET /health', 4, '/api/v1/health'),
  ];
}

/**
 * The write flow, as the apps drive it: a request, the prestataire's offer on a slot of its own (the
 * flow's number picks the prestataire and the hour, from two days ahead), the acceptance, then a
 * conversation about the appointment: a message each way, read.
 */
export function soakFlow({ service, prestataires, clients }) {
  const firstSlot = Math.ceil((Date.now() + 2 * 24 * HOUR_MS) / HOUR_MS) * HOUR_MS;
  return async (request, n) => {
    const client = clients[n % clients.length];
    const prestataire = prestataires[n % prestataires.length];
    const startsAt = new Date(firstSlot + Math.floor(n / prestataires.length) * HOUR_MS).toISOString();
    const asked = await request('POST /service-requests', 'POST', '/api/v1/service-requests', {
      token: client.token,
      body: { vehicle_id: client.vehicleId, service_id: service.id, description: `Vidange et filtres ${n}`, ...LYON },
    });
    const requestId = asked.data.id;
    await request('GET /prestataire/requests/{id}', 'GET', `/api/v1/prestataire/requests/${requestId}`, { token: prestataire.token });
    const offer = await request('POST /service-requests/{id}/offers', 'POST', `/api/v1/service-requests/${requestId}/offers`, {
      token: prestataire.token,
      body: { amount_cents: 8900, proposed_start_at: startsAt, duration_minutes: 60, message: 'Disponible' },
    });
    await request('GET /service-requests/{id}/offers', 'GET', `/api/v1/service-requests/${requestId}/offers`, { token: client.token });
    const accepted = await request('POST /offers/{id}/accept', 'POST', `/api/v1/offers/${offer.data.id}/accept`, { token: client.token });
    const conversation = await request('POST /conversations', 'POST', '/api/v1/conversations', {
      token: client.token,
      body: { participant_id: prestataire.id, appointment_id: accepted.data.appointment.id, message: 'Bonjour, je passerai avec le carnet d’entretien.' },
    });
    const conversationId = conversation.data.id;
    await request('GET /conversations/{id}/messages', 'GET', `/api/v1/conversations/${conversationId}/messages`, { token: prestataire.token });
    await request('POST /conversations/{id}/messages', 'POST', `/api/v1/conversations/${conversationId}/messages`, {
      token: prestataire.token,
      body: { body: 'Très bien, à bientôt.' },
    });
    await request('POST /conversations/{id}/messages/read', 'POST', `/api/v1/conversations/${conversationId}/messages/read`, { token: client.token, body: {} });
  };
}
