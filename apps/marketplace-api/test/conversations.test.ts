import { and, desc, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appointments, domainEvents, payments } from '../src/db/schema/index.js';
import { lifecycleFixtures, nonAdminTokens } from './admin-lifecycle-fixtures.js';
import { bearer, buildTestApp, createAdmin, createClient, createPrestataire, expectAdminOnly, expectError, type TestApp, type TestUser } from './helpers.js';

let t: TestApp;
let client: TestUser;
let prestataire: TestUser;
let stranger: TestUser;
let otherPrestataire: TestUser;
let admin: TestUser;

beforeAll(async () => {
  t = await buildTestApp({ OUTBOX_INTERVAL_MS: '0' });
  client = await createClient(t);
  prestataire = await createPrestataire(t, { status: 'validated' });
  stranger = await createClient(t);
  otherPrestataire = await createPrestataire(t, { status: 'validated' });
  admin = await createAdmin(t);
});
afterAll(async () => {
  await t.close();
});

type Json = Record<string, unknown>;
function api(method: 'GET' | 'POST' | 'DELETE', url: string, token?: string, payload?: Json | null) {
  return t.app.inject({ method, url: `/api/v1${url}`, headers: token ? bearer(token) : {}, ...(payload === undefined ? {} : { payload: payload ?? undefined }) });
}

async function eventsOf(type: string, conversationId: number) {
  return t.database.db
    .select()
    .from(domainEvents)
    .where(and(eq(domainEvents.type, type), eq(domainEvents.subjectType, 'conversation'), eq(domainEvents.subjectId, conversationId)))
    .orderBy(desc(domainEvents.id));
}

let slot = 0;
/** A request of `client` with an appointment booked with `prestataire` (rows written directly). */
async function booked(c: TestUser, p: TestUser, priceCents = 12_000) {
  const f = lifecycleFixtures(t);
  const category = await f.category();
  const service = await f.service(category.id);
  const vehicle = await f.vehicle(c.user.id);
  const request = await f.request({ clientId: c.user.id, vehicleId: vehicle.id, serviceId: service.id, prestataireId: p.user.id, status: 'accepted' });
  const appointment = await f.appointment({
    serviceRequestId: request.id,
    clientId: c.user.id,
    prestataireId: p.user.id,
    vehicleId: vehicle.id,
    serviceId: service.id,
    startsAt: new Date(Date.now() + (3 + slot++) * 86_400_000),
    priceCents,
  });
  return { request, appointment };
}

async function conversation(c: TestUser, p: TestUser, extra: Json = {}) {
  const res = await api('POST', '/conversations', c.token, { participant_id: p.user.id, ...extra });
  expect([200, 201]).toContain(res.statusCode);
  return res.json().data as Json & { id: number };
}

describe('POST /conversations', () => {
  it('opens a conversation with a first message, and answers the same one again', async () => {
    const res = await api('POST', '/conversations', client.token, { participant_id: prestataire.user.id, message: 'Bonjour, êtes-vous libre jeudi ?' });
    expect(res.statusCode).toBe(201);
    const data = res.json().data;
    expect(data).toMatchObject({
      client_id: client.user.id,
      prestataire_id: prestataire.user.id,
      prestataire: { id: prestataire.user.id, business_name: prestataire.profile!.businessName },
      service_request_id: null,
      appointment_id: null,
      dispute_status: 'none',
      dispute: null,
      unread_count: 0,
      last_message: { sender_id: client.user.id, body: 'Bonjour, êtes-vous libre jeudi ?', read_at: null },
    });

    // The prestataire answering opens nothing new: the same pair without a subject has one conversation.
    const again = await api('POST', '/conversations', prestataire.token, { participant_id: client.user.id, message: 'Oui, à 10 h.' });
    expect(again.statusCode).toBe(200);
    expect(again.json().data).toMatchObject({ id: data.id, last_message: { body: 'Oui, à 10 h.', sender_id: prestataire.user.id }, unread_count: 1 });

    const created = await eventsOf('message.created', data.id);
    expect(created).toHaveLength(2);
    expect(created[0]!.payload).toMatchObject({ conversation_id: data.id, body: 'Oui, à 10 h.', recipient_id: client.user.id });
  });

  it('keeps one conversation per subject: a request and an appointment of theirs each get their own', async () => {
    const { request, appointment } = await booked(client, prestataire);
    const plain = await conversation(client, prestataire);
    const aboutRequest = await conversation(client, prestataire, { service_request_id: request.id });
    const aboutAppointment = await conversation(client, prestataire, { service_request_id: request.id, appointment_id: appointment.id });
    expect(new Set([plain.id, aboutRequest.id, aboutAppointment.id]).size).toBe(3);
    expect(aboutAppointment).toMatchObject({ service_request_id: request.id, appointment_id: appointment.id });
    expect((await conversation(prestataire, client, { service_request_id: request.id })).id).toBe(aboutRequest.id);

    const list = await api('GET', '/conversations?per_page=100', prestataire.token);
    expect(list.statusCode).toBe(200);
    expect(list.json().data.map((c: Json) => c.id)).toEqual(expect.arrayContaining([plain.id, aboutRequest.id, aboutAppointment.id]));
    expect(list.json().meta).toMatchObject({ current_page: 1, per_page: 100 });
    // Nobody else sees them.
    expect((await api('GET', '/conversations', stranger.token)).json().data).toEqual([]);
  });

  it('accepts a request the prestataire quoted on', async () => {
    const f = lifecycleFixtures(t);
    const service = await f.service((await f.category()).id);
    const vehicle = await f.vehicle(client.user.id);
    const request = await f.request({ clientId: client.user.id, vehicleId: vehicle.id, serviceId: service.id });
    expectError(await api('POST', '/conversations', otherPrestataire.token, { participant_id: client.user.id, service_request_id: request.id }), 422, 'validation_error');
    await f.offer({ serviceRequestId: request.id, prestataireId: otherPrestataire.user.id });
    const res = await api('POST', '/conversations', otherPrestataire.token, { participant_id: client.user.id, service_request_id: request.id });
    expect(res.statusCode).toBe(201);
  });

  it('refuses a participant of the same side, an unknown one, and subjects that are not theirs (422)', async () => {
    const { request, appointment } = await booked(stranger, prestataire);
    const cases: [string, Json, string][] = [
      [client.token, { participant_id: stranger.user.id }, 'participant_id'],
      [client.token, { participant_id: admin.user.id }, 'participant_id'],
      [client.token, { participant_id: client.user.id }, 'participant_id'],
      [client.token, { participant_id: 2_000_000_000 }, 'participant_id'],
      [prestataire.token, { participant_id: otherPrestataire.user.id }, 'participant_id'],
      [client.token, { participant_id: prestataire.user.id, service_request_id: request.id }, 'service_request_id'],
      [client.token, { participant_id: prestataire.user.id, appointment_id: appointment.id }, 'appointment_id'],
      [client.token, { participant_id: prestataire.user.id, message: '' }, 'message'],
      [client.token, {}, 'participant_id'],
      [client.token, { participant_id: 'x' }, 'participant_id'],
    ];
    for (const [token, body, field] of cases) {
      const res = await api('POST', '/conversations', token, body);
      expectError(res, 422, 'validation_error');
      expect(Object.keys(res.json().errors)).toContain(field);
    }
    const { request: own } = await booked(client, prestataire);
    const res = await api('POST', '/conversations', client.token, { participant_id: prestataire.user.id, service_request_id: own.id, appointment_id: appointment.id });
    expectError(res, 422, 'validation_error');
  });

  it('is for clients and prestataires only', async () => {
    expectError(await api('POST', '/conversations', undefined, { participant_id: prestataire.user.id }), 401, 'unauthenticated');
    expectError(await api('POST', '/conversations', admin.token, { participant_id: prestataire.user.id }), 403, 'forbidden');
    expectError(await api('GET', '/conversations', admin.token), 403, 'forbidden');
    expectError(await api('GET', '/conversations'), 401, 'unauthenticated');
    expectError(await api('GET', '/conversations?per_page=101', client.token), 422, 'validation_error');
  });
});

describe('messages', () => {
  it('lists newest first with cursor paging', async () => {
    const c = await conversation(stranger, otherPrestataire);
    const ids: number[] = [];
    for (const body of ['un', 'deux', 'trois', 'quatre', 'cinq']) {
      const res = await api('POST', `/conversations/${c.id}/messages`, body.length % 2 ? stranger.token : otherPrestataire.token, { body });
      expect(res.statusCode).toBe(201);
      expect(res.json().data).toMatchObject({ conversation_id: c.id, body });
      ids.push(res.json().data.id);
    }
    const first = await api('GET', `/conversations/${c.id}/messages?limit=2`, stranger.token);
    expect(first.statusCode).toBe(200);
    expect(first.json().data.map((m: Json) => m.body)).toEqual(['cinq', 'quatre']);
    expect(first.json().meta).toEqual({ next_before: ids[3], has_more: true, limit: 2 });
    const second = await api('GET', `/conversations/${c.id}/messages?limit=2&before=${ids[3]}`, otherPrestataire.token);
    expect(second.json().data.map((m: Json) => m.body)).toEqual(['trois', 'deux']);
    const last = await api('GET', `/conversations/${c.id}/messages?limit=2&before=${ids[1]}`, stranger.token);
    expect(last.json().data.map((m: Json) => m.body)).toEqual(['un']);
    expect(last.json().meta).toMatchObject({ next_before: null, has_more: false });
  });

  it('marks read up to a message, then all, and publishes the receipt', async () => {
    const c = await conversation(client, otherPrestataire);
    const sent: number[] = [];
    for (const body of ['a', 'b', 'c']) sent.push((await api('POST', `/conversations/${c.id}/messages`, client.token, { body })).json().data.id);
    await api('POST', `/conversations/${c.id}/messages`, otherPrestataire.token, { body: 'réponse' });

    const partial = await api('POST', `/conversations/${c.id}/messages/read`, otherPrestataire.token, { last_read_message_id: sent[1] });
    expect(partial.statusCode).toBe(200);
    expect(partial.json().data).toMatchObject({ conversation_id: c.id, reader_id: otherPrestataire.user.id, last_read_message_id: sent[1] });
    let list = (await api('GET', `/conversations/${c.id}/messages`, otherPrestataire.token)).json().data as Json[];
    expect(list.filter((m) => m.read_at !== null).map((m) => m.body)).toEqual(['b', 'a']);
    const mine = (await api('GET', '/conversations?per_page=100', otherPrestataire.token)).json().data.find((x: Json) => x.id === c.id);
    expect(mine.unread_count).toBe(1);

    const all = await api('POST', `/conversations/${c.id}/messages/read`, otherPrestataire.token);
    expect(all.json().data.last_read_message_id).toBe(sent[2]);
    list = (await api('GET', `/conversations/${c.id}/messages`, client.token)).json().data;
    // The prestataire's own message stays unread until the client reads it.
    expect(list.filter((m) => m.read_at === null).map((m) => m.body)).toEqual(['réponse']);
    const receipts = await eventsOf('conversation.read', c.id);
    expect(receipts).toHaveLength(2);
    expect(receipts[0]!.payload).toMatchObject({ conversation_id: c.id, reader_id: otherPrestataire.user.id, last_read_message_id: sent[2] });

    const foreign = await conversation(stranger, otherPrestataire, { message: 'ailleurs' });
    const foreignId = ((await api('GET', `/conversations/${foreign.id}/messages`, stranger.token)).json().data as Json[])[0]!.id;
    expectError(await api('POST', `/conversations/${c.id}/messages/read`, otherPrestataire.token, { last_read_message_id: foreignId as number }), 422, 'validation_error');
  });

  it('publishes typing', async () => {
    const c = await conversation(client, prestataire);
    const res = await api('POST', `/conversations/${c.id}/typing`, prestataire.token);
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toEqual({ conversation_id: c.id, user_id: prestataire.user.id });
    expect((await eventsOf('conversation.typing', c.id))[0]!.payload).toEqual({ conversation_id: c.id, user_id: prestataire.user.id });
  });

  it('refuses empty or oversized messages', async () => {
    const c = await conversation(client, prestataire);
    expectError(await api('POST', `/conversations/${c.id}/messages`, client.token, { body: '   ' }), 422, 'validation_error');
    expectError(await api('POST', `/conversations/${c.id}/messages`, client.token, { body: 'x'.repeat(5001) }), 422, 'validation_error');
    expectError(await api('POST', `/conversations/${c.id}/messages`, client.token, {}), 422, 'validation_error');
    expectError(await api('GET', `/conversations/${c.id}/messages?limit=0`, client.token), 422, 'validation_error');
  });

  it('hides a conversation from everyone but its two parties', async () => {
    const c = await conversation(client, prestataire);
    const routes: ['GET' | 'POST', string, Json | undefined][] = [
      ['GET', `/conversations/${c.id}/messages`, undefined],
      ['POST', `/conversations/${c.id}/messages`, { body: 'hello' }],
      ['POST', `/conversations/${c.id}/messages/read`, {}],
      ['POST', `/conversations/${c.id}/typing`, undefined],
      ['POST', `/conversations/${c.id}/report-dispute`, { reason: 'Travail non fait' }],
    ];
    for (const [method, url, body] of routes) {
      expectError(await api(method, url, stranger.token, body), 404, 'not_found');
      expectError(await api(method, url, otherPrestataire.token, body), 404, 'not_found');
      expectError(await api(method, url, admin.token, body), 403, 'forbidden');
      expectError(await api(method, url, undefined, body), 401, 'unauthenticated');
    }
    expectError(await api('GET', '/conversations/999999/messages', client.token), 404, 'not_found');
  });
});

describe('disputes', () => {
  it('reports one dispute (a second while open is 409), and an administrator resolves it with a refund', async () => {
    const { appointment } = await booked(client, prestataire, 20_000);
    const c = await conversation(client, prestataire, { appointment_id: appointment.id });

    expectError(await api('POST', `/conversations/${c.id}/report-dispute`, client.token, {}), 422, 'validation_error');
    const reported = await api('POST', `/conversations/${c.id}/report-dispute`, client.token, { reason: 'Le bruit est toujours là' });
    expect(reported.statusCode).toBe(200);
    expect(reported.json().data).toMatchObject({
      id: c.id,
      dispute_status: 'open',
      dispute: { reason: 'Le bruit est toujours là', reported_by: client.user.id, resolution_note: null, refund_cents: null },
    });
    const second = await api('POST', `/conversations/${c.id}/report-dispute`, prestataire.token, { reason: 'Moi aussi' });
    expectError(second, 409, 'conflict');
    expect(second.json().current_status).toBe('open');
    expect((await eventsOf('conversation.dispute_reported', c.id))[0]!.payload).toMatchObject({ from: 'none', to: 'open', appointment_id: appointment.id });

    const open = await api('GET', '/admin/conversations?dispute_status=open&per_page=100', admin.token);
    expect(open.statusCode).toBe(200);
    expect(open.json().data.map((x: Json) => x.id)).toContain(c.id);
    expect(open.json().data.every((x: Json) => x.dispute_status === 'open')).toBe(true);

    const messages = await api('GET', `/admin/conversations/${c.id}/messages`, admin.token);
    expect(messages.statusCode).toBe(200);

    expectError(await api('POST', `/admin/conversations/${c.id}/resolve-dispute`, admin.token, { note: 'Trop', refund_cents: 20_001 }), 422, 'validation_error');
    expectError(await api('POST', `/admin/conversations/${c.id}/resolve-dispute`, admin.token, { refund_cents: 100 }), 422, 'validation_error');
    // A refund needs a payment to refund: the dispute stays open until there is one.
    expectError(await api('POST', `/admin/conversations/${c.id}/resolve-dispute`, admin.token, { note: 'Remboursement', refund_cents: 5_000 }), 422, 'validation_error');
    await t.database.db.update(appointments).set({ status: 'ended', endedAt: new Date() }).where(eq(appointments.id, appointment.id));
    expect((await api('POST', `/appointments/${appointment.id}/payment/initiate`, client.token)).statusCode).toBe(201);
    expect((await api('POST', `/appointments/${appointment.id}/payment/validate`, client.token, { simulate: 'succeeded' })).statusCode).toBe(200);

    const resolved = await api('POST', `/admin/conversations/${c.id}/resolve-dispute`, admin.token, { note: 'Remboursement partiel', refund_cents: 5_000 });
    expect(resolved.statusCode).toBe(200);
    // The refund decided is made through the payments module.
    const [payment] = await t.database.db.select().from(payments).where(eq(payments.appointmentId, appointment.id));
    expect(payment).toMatchObject({ status: 'partially_refunded', refundedCents: 5_000 });
    expect(resolved.json().data).toMatchObject({ dispute_status: 'resolved', dispute: { resolution_note: 'Remboursement partiel', refund_cents: 5_000 } });
    expect((await eventsOf('conversation.dispute_resolved', c.id))[0]!.payload).toMatchObject({
      from: 'open',
      to: 'resolved',
      refund_cents: 5_000,
      appointment_id: appointment.id,
      client_id: client.user.id,
      prestataire_id: prestataire.user.id,
    });
    const again = await api('POST', `/admin/conversations/${c.id}/resolve-dispute`, admin.token, { note: 'Encore' });
    expectError(again, 409, 'conflict');
    expect(again.json().current_status).toBe('resolved');
    expectError(await api('POST', `/conversations/${c.id}/report-dispute`, client.token, { reason: 'De nouveau' }), 409, 'conflict');
  });

  it('refunds only a conversation about an appointment; a dispute must be open to be resolved', async () => {
    const c = await conversation(stranger, prestataire);
    expectError(await api('POST', `/admin/conversations/${c.id}/resolve-dispute`, admin.token, { note: 'Rien' }), 409, 'conflict');
    await api('POST', `/conversations/${c.id}/report-dispute`, prestataire.token, { reason: 'Client injoignable' });
    expectError(await api('POST', `/admin/conversations/${c.id}/resolve-dispute`, admin.token, { note: 'x', refund_cents: 100 }), 422, 'validation_error');
    const res = await api('POST', `/admin/conversations/${c.id}/resolve-dispute`, admin.token, { note: 'Sans suite' });
    expect(res.json().data).toMatchObject({ dispute_status: 'resolved', dispute: { refund_cents: null } });
    expectError(await api('POST', '/admin/conversations/999999/resolve-dispute', admin.token, { note: 'x' }), 404, 'not_found');
    expectError(await api('GET', '/admin/conversations/999999/messages', admin.token), 404, 'not_found');
  });

  it('keeps the admin routes for administrators', async () => {
    const tokens = await nonAdminTokens(t);
    const c = await conversation(client, prestataire);
    await expectAdminOnly(t, tokens, 'GET', '/admin/conversations');
    await expectAdminOnly(t, tokens, 'GET', `/admin/conversations/${c.id}/messages`);
    await expectAdminOnly(t, tokens, 'POST', `/admin/conversations/${c.id}/resolve-dispute`, { note: 'x' });
    expectError(await api('GET', '/admin/conversations?dispute_status=closed', admin.token), 422, 'validation_error');
  });
});

describe('races', () => {
  it.skipIf(!process.env.TEST_DATABASE_URL)('ends with one conversation from concurrent openings, and one dispute from concurrent reports', async () => {
    const c = await createClient(t);
    const p = await createPrestataire(t, { status: 'validated' });
    const opened = await Promise.all(
      Array.from({ length: 8 }, (_, i) => api('POST', '/conversations', i % 2 ? p.token : c.token, { participant_id: i % 2 ? c.user.id : p.user.id, message: `m${i}` })),
    );
    expect(opened.map((r) => r.statusCode).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 201]);
    const ids = new Set(opened.map((r) => r.json().data.id));
    expect(ids.size).toBe(1);
    const [id] = [...ids] as number[];
    expect((await api('GET', `/conversations/${id}/messages`, c.token)).json().data).toHaveLength(8);

    const reports = await Promise.all(
      Array.from({ length: 6 }, (_, i) => api('POST', `/conversations/${id}/report-dispute`, i % 2 ? p.token : c.token, { reason: `r${i}` })),
    );
    expect(reports.map((r) => r.statusCode).sort()).toEqual([200, 409, 409, 409, 409, 409]);
    expect(await eventsOf('conversation.dispute_reported', id!)).toHaveLength(1);
  });
});
