import { and, eq, inArray } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { domainEvents, notifications } from '../src/db/schema/index.js';
import { systemActor, type Actor } from '../src/lib/context.js';
import { createNotificationsConsumer } from '../src/modules/notifications/notifications.consumer.js';
import { createOutbox } from '../src/modules/outbox/outbox.js';
import { bearer, buildTestApp, createAdmin, createClient, expectError, type TestApp, type TestUser } from './helpers.js';
import { lifecycleFixtures } from './lifecycle-fixtures.js';
import { deliverAll } from './outbox-helpers.js';

let t: TestApp;
let client: TestUser; // writes in English
let admin: TestUser;
const f = lifecycleFixtures(() => t);

beforeAll(async () => {
  t = await buildTestApp({ OUTBOX_INTERVAL_MS: '0' });
  client = await createClient(t, { lang: 'en' });
  admin = await createAdmin(t);
});
afterAll(async () => {
  await t.close();
});

type Json = Record<string, unknown>;
const deliver = () => deliverAll(t, ['notifications']);
const api = (method: 'GET' | 'POST' | 'DELETE', url: string, token?: string, payload?: Json) =>
  t.app.inject({ method, url: `/api/v1${url}`, headers: token ? bearer(token) : {}, ...(payload ? { payload } : {}) });

async function inbox(user: TestUser) {
  return t.database.db.select().from(notifications).where(eq(notifications.userId, user.user.id)).orderBy(notifications.id);
}

const actorOf = (user: TestUser): Actor => ({ kind: 'user', userId: user.user.id, role: user.user.role, sessionId: 's', requestId: 'r', ip: '192.0.2.1' });

describe('notifications from domain events', () => {
  it('tells each party of the lifecycle in its language, never the one who acted, with the ids to link to', async () => {
    const service = await f.service();
    const prestataire = await f.prestataire([service.id]); // French by default
    const request = await f.request(client, service.id, { prestataireId: prestataire.user.id });
    await deliver();
    expect((await inbox(prestataire)).map((n) => [n.type, n.title])).toEqual([['service_request.created', 'Nouvelle demande']]);
    expect(await inbox(client)).toEqual([]);

    const offer = await f.offer(prestataire, request.id, { amount_cents: 15_000 });
    expect(offer.statusCode).toBe(201);
    await deliver();
    const [offerNote] = await inbox(client);
    expect(offerNote).toMatchObject({ type: 'offer.created', title: 'New offer', body: 'You received an offer of €150.00.' });
    expect(offerNote!.data).toMatchObject({ event: 'offer.created', offer_id: offer.json().data.id, service_request_id: request.id });

    const accepted = await f.api('POST', `/offers/${offer.json().data.id}/accept`, client.token);
    expect(accepted.statusCode).toBe(200);
    await deliver();
    const appointmentId = accepted.json().data.appointment.id as number;
    const forPrestataire = (await inbox(prestataire)).map((n) => n.type);
    expect(forPrestataire).toEqual(expect.arrayContaining(['offer.accepted', 'appointment.created']));
    // The client accepted: nothing about its own move.
    expect((await inbox(client)).map((n) => n.type)).toEqual(['offer.created']);

    // Appointment moves (published by their module through `transition`, payload without the parties).
    const outbox = createOutbox({ db: t.database.db });
    await outbox.publish(actorOf(prestataire), { type: 'appointment.started', subject: { type: 'appointment', id: appointmentId }, payload: { from: 'scheduled', to: 'in_progress' } });
    await outbox.publish(systemActor, { type: 'payment.succeeded', subject: { type: 'payment', id: 77 }, payload: { appointment_id: appointmentId, amount_cents: 15_000 } });
    await outbox.publish(systemActor, { type: 'review.unknown_thing', subject: { type: 'review', id: 1 }, payload: {} });
    await deliver();
    const clientTypes = (await inbox(client)).map((n) => [n.type, n.title]);
    expect(clientTypes).toEqual([
      ['offer.created', 'New offer'],
      ['appointment.started', 'Work started'],
      ['payment.succeeded', 'Payment received'],
    ]);
    const paid = (await inbox(prestataire)).find((n) => n.type === 'payment.succeeded');
    expect(paid).toMatchObject({ title: 'Paiement reçu', body: 'Le paiement de 150,00\u00a0€ a réussi.' });
    expect(paid!.data).toMatchObject({ payment_id: 77, appointment_id: appointmentId });

    // Through the appointments module's own route: the client cancels, the prestataire is told.
    const cancelled = await f.api('POST', `/appointments/${appointmentId}/cancel`, client.token, { reason: 'Empêchement' });
    expect(cancelled.statusCode).toBe(200);
    await deliver();
    expect((await inbox(prestataire)).at(-1)).toMatchObject({ type: 'appointment.cancelled', title: 'Rendez-vous annulé', data: { appointment_id: appointmentId } });
    expect((await inbox(client)).map((n) => n.type)).not.toContain('appointment.cancelled');
  });

  it('tells a prestataire of its validation, and the other party of a message and of a dispute settled', async () => {
    const prestataire = await (async () => {
      const service = await f.service();
      return f.prestataire([service.id]);
    })();
    const outbox = createOutbox({ db: t.database.db });
    await outbox.publish(actorOf(admin), { type: 'prestataire.validated', subject: { type: 'user', id: prestataire.user.id }, payload: { from: 'pending', to: 'validated' } });

    const conversation = await api('POST', '/conversations', client.token, { participant_id: prestataire.user.id, message: 'Bonjour !  Pouvez-vous passer\ndemain ?' });
    const conversationId = conversation.json().data.id as number;
    await api('POST', `/conversations/${conversationId}/report-dispute`, client.token, { reason: 'Retard' });
    await api('POST', `/admin/conversations/${conversationId}/resolve-dispute`, admin.token, { note: 'Réglé' });
    await deliver();

    expect((await inbox(prestataire)).map((n) => [n.type, n.title, n.body])).toEqual([
      ['prestataire.validated', 'Compte validé', 'Votre compte prestataire est validé : vous apparaissez dans les recherches.'],
      ['message.created', 'Nouveau message', 'Bonjour ! Pouvez-vous passer demain ?'],
      ['conversation.dispute_reported', 'Litige signalé', expect.any(String)],
      ['conversation.dispute_resolved', 'Litige résolu', 'Le litige est résolu.'],
    ]);
    const resolved = (await inbox(client)).filter((n) => n.type === 'conversation.dispute_resolved');
    expect(resolved).toHaveLength(1);
    expect(resolved[0]).toMatchObject({ title: 'Dispute resolved', data: { conversation_id: conversationId } });
    const message = (await inbox(prestataire)).find((n) => n.type === 'message.created')!;
    expect(message.data).toMatchObject({ conversation_id: conversationId, message_id: expect.any(Number) });

    // Each notification is announced for the real-time delivery and push.
    const announced = await t.database.db
      .select()
      .from(domainEvents)
      .where(and(eq(domainEvents.type, 'notification.created'), eq(domainEvents.subjectId, prestataire.user.id)));
    expect(announced.map((e) => e.payload.id).sort()).toEqual((await inbox(prestataire)).map((n) => n.id).sort());
    expect(announced[0]!.payload).toMatchObject({ user_id: prestataire.user.id, title: 'Compte validé', read_at: null });
  });

  it('notifies once, even when a batch is delivered again', async () => {
    const prestataire = await f.prestataire([(await f.service()).id]);
    const outbox = createOutbox({ db: t.database.db });
    await outbox.publish(actorOf(admin), { type: 'prestataire.suspended', subject: { type: 'user', id: prestataire.user.id }, payload: {} });
    await deliver();
    await deliver();
    expect((await inbox(prestataire)).map((n) => n.type)).toEqual(['prestataire.suspended']);

    // The same events handed to the consumer a second time (a batch whose cursor move was lost).
    const events = await t.database.db
      .select()
      .from(domainEvents)
      .where(and(eq(domainEvents.subjectType, 'user'), eq(domainEvents.subjectId, prestataire.user.id), inArray(domainEvents.type, ['prestataire.suspended'])));
    await createNotificationsConsumer({ outbox }).handle(events, t.database.db);
    expect(await inbox(prestataire)).toHaveLength(1);
  });
});

describe('notification routes', () => {
  async function seeded(count: number) {
    const user = await createClient(t);
    const rows = await t.database.db
      .insert(notifications)
      .values(Array.from({ length: count }, (_, i) => ({ userId: user.user.id, type: 'test', title: `T${i}`, body: `B${i}`, data: { n: i } })))
      .returning();
    return { user, ids: rows.map((r) => r.id) };
  }

  it('lists newest first with the unread count, reads one and all', async () => {
    const { user, ids } = await seeded(3);
    const list = await api('GET', '/notifications?per_page=2', user.token);
    expect(list.statusCode).toBe(200);
    expect(list.json().meta).toEqual({ current_page: 1, per_page: 2, total: 3, last_page: 2, unread_count: 3 });
    expect(list.json().data.map((n: Json) => n.id)).toEqual([ids[2], ids[1]]);
    expect(list.json().data[0]).toMatchObject({ type: 'test', title: 'T2', body: 'B2', data: { n: 2 }, read_at: null });

    const read = await api('POST', `/notifications/${ids[0]}/read`, user.token);
    expect(read.statusCode).toBe(200);
    expect(read.json().data.read_at).toEqual(expect.any(String));
    const unread = await api('GET', '/notifications?unread=true', user.token);
    expect(unread.json().data.map((n: Json) => n.id)).toEqual([ids[2], ids[1]]);
    expect(unread.json().meta.unread_count).toBe(2);

    const all = await api('POST', '/notifications/read-all', user.token);
    expect(all.json()).toMatchObject({ data: { count: 2 } });
    expect((await api('GET', '/notifications', user.token)).json().meta.unread_count).toBe(0);
  });

  it('deletes one and all', async () => {
    const { user, ids } = await seeded(3);
    const one = await api('DELETE', `/notifications/${ids[1]}`, user.token);
    expect(one.statusCode).toBe(200);
    expect(one.json().message).toEqual(expect.any(String));
    expect((await api('GET', '/notifications', user.token)).json().data.map((n: Json) => n.id)).toEqual([ids[2], ids[0]]);
    expectError(await api('DELETE', `/notifications/${ids[1]}`, user.token), 404, 'not_found');
    const all = await api('DELETE', '/notifications', user.token);
    expect(all.json().data.count).toBe(2);
    expect((await api('GET', '/notifications', user.token)).json().meta.total).toBe(0);
  });

  it("keeps each user's notifications to that user", async () => {
    const { ids } = await seeded(1);
    const other = await createClient(t);
    expectError(await api('POST', `/notifications/${ids[0]}/read`, other.token), 404, 'not_found');
    expectError(await api('DELETE', `/notifications/${ids[0]}`, other.token), 404, 'not_found');
    expect((await api('DELETE', '/notifications', other.token)).json().data.count).toBe(0);
    expect((await api('POST', '/notifications/read-all', other.token)).json().data.count).toBe(0);
    const [row] = await t.database.db.select().from(notifications).where(eq(notifications.id, ids[0]!));
    expect(row).toMatchObject({ readAt: null });
    // Administrators have an inbox too (warnings are for users; the route is for everyone signed in).
    expect((await api('GET', '/notifications', admin.token)).statusCode).toBe(200);
  });

  it('answers 401 without a token and 422 for bad input', async () => {
    for (const [method, url] of [
      ['GET', '/notifications'],
      ['POST', '/notifications/read-all'],
      ['POST', '/notifications/1/read'],
      ['DELETE', '/notifications/1'],
      ['DELETE', '/notifications'],
    ] as const) {
      expectError(await api(method, url), 401, 'unauthenticated');
    }
    expectError(await api('POST', '/notifications/abc/read', client.token), 422, 'validation_error');
    expectError(await api('GET', '/notifications?per_page=0', client.token), 422, 'validation_error');
    expectError(await api('GET', '/notifications?unread=maybe', client.token), 422, 'validation_error');
  });
});
