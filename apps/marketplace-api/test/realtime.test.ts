import { createDatabase, type DatabaseHandle } from '@repo/db';
import type { FastifyInstance } from 'fastify';
import PusherJs from 'pusher-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { buildApp } from '../src/app.js';
import { extensions, migrationsFolder, schema, type Schema } from '../src/db/index.js';
import { payments } from '../src/db/schema/index.js';
import { socketIdOf, systemActor } from '../src/lib/context.js';
import { createOutbox, type DomainEventInput } from '../src/modules/outbox/outbox.js';
import { authFor } from '../src/modules/realtime/pusher.protocol.js';
import { lifecycleFixtures } from './admin-lifecycle-fixtures.js';
import { deliverAll } from './outbox-helpers.js';
import { bearer, buildTestApp, createClient, createPrestataire, expectError, type TestApp, type TestUser } from './helpers.js';

// pusher-js is CommonJS: its module.exports is the class, while its types declare a default export.
const Pusher = ((PusherJs as unknown as { default?: unknown }).default ?? PusherJs) as typeof PusherJs.default;
type Pusher = InstanceType<typeof Pusher>;

// The real-time protocol as a mobile or web app speaks it: the real pusher-js client over a real
// socket, its channel authorisation through POST /broadcasting/auth.
const KEY = 'marketplace-key';
let SECRET: string;

let t: TestApp;
let port: number;
let alice: TestUser;
let bob: TestUser;
const clients: Pusher[] = [];
const sockets: WebSocket[] = [];

beforeAll(async () => {
  // Deliveries only when a test drains the outbox; a short activity timeout for the ping test.
  t = await buildTestApp({ OUTBOX_INTERVAL_MS: '0' });
  SECRET = t.config.pusher.secret;
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  port = (t.app.server.address() as { port: number }).port;
  alice = await createClient(t);
  bob = await createClient(t);
}, 60_000);

afterAll(async () => {
  for (const c of clients) c.disconnect();
  for (const s of sockets) s.terminate();
  await t?.close();
});

/** A pusher-js client of the app on `appPort`, connected, authorising as `token`. */
async function connect(token: string, appPort = port, authorizer?: (channel: string, socketId: string) => string): Promise<Pusher> {
  const pusher = new Pusher(KEY, {
    cluster: 'local',
    wsHost: '127.0.0.1',
    wsPort: appPort,
    forceTLS: false,
    enabledTransports: ['ws'],
    disableStats: true,
    channelAuthorization: authorizer
      ? {
          endpoint: '',
          transport: 'ajax',
          customHandler: (params, callback) => callback(null, { auth: authorizer(params.channelName, params.socketId) }),
        }
      : { endpoint: `http://127.0.0.1:${appPort}/api/v1/broadcasting/auth`, transport: 'ajax', headers: { Authorization: `Bearer ${token}` } },
  });
  clients.push(pusher);
  await new Promise<void>((resolve, reject) => {
    pusher.connection.bind('connected', () => resolve());
    pusher.connection.bind('failed', () => reject(new Error('pusher-js could not connect')));
  });
  return pusher;
}

/** Subscribes and waits for the answer: resolves on success, rejects with the subscription error. */
function subscribe(pusher: Pusher, channelName: string) {
  const channel = pusher.subscribe(channelName);
  return new Promise<typeof channel>((resolve, reject) => {
    channel.bind('pusher:subscription_succeeded', () => resolve(channel));
    channel.bind('pusher:subscription_error', (error: unknown) => reject(Object.assign(new Error('subscription refused'), { detail: error })));
  });
}

/** Everything `event` brings on the channel, for later inspection. */
function collect(channel: ReturnType<Pusher['subscribe']>, event: string) {
  const seen: unknown[] = [];
  channel.bind(event, (data: unknown) => seen.push(data));
  return seen;
}

function waitFor<T>(probe: () => T | undefined, ms = 5000): Promise<T> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const tick = () => {
      const value = probe();
      if (value !== undefined) return resolve(value);
      if (Date.now() - started > ms) return reject(new Error('timed out'));
      setTimeout(tick, 10);
    };
    tick();
  });
}

const settle = (ms = 150) => new Promise((resolve) => setTimeout(resolve, ms));

async function publish(app: FastifyInstance, db: TestApp['database']['db'], event: DomainEventInput) {
  await createOutbox({ db }).publish(systemActor, event);
  await deliverAll({ app, database: { db } }, ['realtime']);
}

/** A conversation between a client and a prestataire, opened through the API; answers its id. */
async function openConversation(client: TestUser, prestataire: TestUser): Promise<number> {
  const res = await t.app.inject({
    method: 'POST',
    url: '/api/v1/conversations',
    headers: bearer(client.token),
    payload: { participant_id: prestataire.user.id },
  });
  if (res.statusCode !== 201) throw new Error(`conversation fixture: ${res.statusCode} ${res.body}`);
  return (res.json() as { data: { id: number } }).data.id;
}

/** A raw socket speaking the protocol by hand, its frames collected. */
async function rawSocket(path = `/app/${KEY}?protocol=7&client=js&version=8.6.0`, appPort = port) {
  const ws = new WebSocket(`ws://127.0.0.1:${appPort}${path}`);
  sockets.push(ws);
  const frames: { event: string; channel?: string; data: unknown }[] = [];
  const closed = new Promise<{ code: number }>((resolve) => ws.on('close', (code) => resolve({ code })));
  ws.on('message', (raw) => frames.push(JSON.parse(String(raw)) as { event: string; channel?: string; data: unknown }));
  await waitFor(() => (frames.length > 0 ? true : undefined));
  const send = (event: string, data: unknown, channel?: string) => ws.send(JSON.stringify({ event, data, ...(channel ? { channel } : {}) }));
  const established = frames[0]!;
  const socketId = established.event === 'pusher:connection_established' ? (JSON.parse(established.data as string) as { socket_id: string }).socket_id : '';
  return { ws, frames, send, closed, socketId };
}

describe('POST /broadcasting/auth', () => {
  it("signs the user's own channel, form-encoded as pusher-js sends it, or JSON", async () => {
    const form = await t.app.inject({
      method: 'POST',
      url: '/api/v1/broadcasting/auth',
      headers: { ...bearer(alice.token), 'content-type': 'application/x-www-form-urlencoded' },
      payload: `socket_id=123.456&channel_name=private-user.${alice.user.id}`,
    });
    expect(form.statusCode).toBe(200);
    expect(form.json()).toEqual({ auth: authFor(KEY, SECRET, '123.456', `private-user.${alice.user.id}`) });
    const json = await t.app.inject({
      method: 'POST',
      url: '/api/v1/broadcasting/auth',
      headers: bearer(alice.token),
      payload: { socket_id: '1.2', channel_name: `private-user.${alice.user.id}` },
    });
    expect(json.statusCode).toBe(200);
    expect(json.json().auth).toMatch(new RegExp(`^${KEY}:[0-9a-f]{64}$`));
  });

  it("refuses another user's channel, unknown channels, and a conversation one is not party to (403)", async () => {
    for (const channel_name of [`private-user.${bob.user.id}`, 'private-admin', 'presence-room', 'public', 'private-conversation.999999']) {
      const res = await t.app.inject({ method: 'POST', url: '/api/v1/broadcasting/auth', headers: bearer(alice.token), payload: { socket_id: '1.2', channel_name } });
      expectError(res, 403, 'forbidden');
    }
  });

  it('asks for a token (401) and valid fields (422)', async () => {
    const anonymous = await t.app.inject({ method: 'POST', url: '/api/v1/broadcasting/auth', payload: { socket_id: '1.2', channel_name: 'private-user.1' } });
    expectError(anonymous, 401, 'unauthenticated');
    const bad = await t.app.inject({
      method: 'POST',
      url: '/api/v1/broadcasting/auth',
      headers: bearer(alice.token),
      payload: { socket_id: 'abc', channel_name: 'private user' },
    });
    expectError(bad, 422, 'validation_error');
    expect(Object.keys(bad.json().errors).sort()).toEqual(['channel_name', 'socket_id']);
  });

  it("signs a conversation's channel for its two parties only", async () => {
    const prestataire = await createPrestataire(t, { status: 'validated' });
    const conversationId = await openConversation(alice, prestataire);
    for (const user of [alice, prestataire]) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/v1/broadcasting/auth',
        headers: bearer(user.token),
        payload: { socket_id: '1.2', channel_name: `private-conversation.${conversationId}` },
      });
      expect(res.statusCode).toBe(200);
    }
    const stranger = await t.app.inject({
      method: 'POST',
      url: '/api/v1/broadcasting/auth',
      headers: bearer(bob.token),
      payload: { socket_id: '1.2', channel_name: `private-conversation.${conversationId}` },
    });
    expectError(stranger, 403, 'forbidden');
  });
});

describe('the Pusher protocol with pusher-js', () => {
  it('delivers an event published through the outbox to the subscriber of the user channel', async () => {
    const pusher = await connect(alice.token);
    const channel = await subscribe(pusher, `private-user.${alice.user.id}`);
    const seen = collect(channel, 'notification.created');
    const notification = { id: 1, user_id: alice.user.id, type: 'offer.created', title: 'Nouvelle offre', body: '…', read_at: null };
    await publish(t.app, t.database.db, { type: 'notification.created', subject: { type: 'notification', id: 1 }, payload: notification });
    await waitFor(() => (seen.length ? seen : undefined));
    expect(seen).toEqual([notification]);
  });

  it('sends offers, appointments and payments as the resource after the change to both parties', async () => {
    const prestataire = await createPrestataire(t, { status: 'validated' });
    const f = lifecycleFixtures(t);
    const service = await f.service((await f.category()).id);
    const vehicle = await f.vehicle(alice.user.id);
    const request = await f.request({ clientId: alice.user.id, vehicleId: vehicle.id, serviceId: service.id });
    const offer = await f.offer({ serviceRequestId: request.id, prestataireId: prestataire.user.id });
    const appointment = await f.appointment({
      serviceRequestId: request.id,
      clientId: alice.user.id,
      prestataireId: prestataire.user.id,
      vehicleId: vehicle.id,
      serviceId: service.id,
      startsAt: new Date(Date.now() + 72 * 3_600_000),
    });
    const [payment] = await t.database.db
      .insert(payments)
      .values({ appointmentId: appointment.id, clientId: alice.user.id, prestataireId: prestataire.user.id, amountCents: 12_000, processor: 'builtin', intentId: `pi_${appointment.id}`, clientSecret: 'secret', status: 'succeeded' })
      .returning();
    const clientSide = await subscribe(await connect(alice.token), `private-user.${alice.user.id}`);
    const proSide = await subscribe(await connect(prestataire.token), `private-user.${prestataire.user.id}`);
    const offersSeen = [collect(clientSide, 'offer.created'), collect(proSide, 'offer.created')];
    const movesSeen = [collect(clientSide, 'appointment.updated'), collect(proSide, 'appointment.updated')];
    const paymentsSeen = [collect(clientSide, 'payment.updated'), collect(proSide, 'payment.updated')];
    await publish(t.app, t.database.db, { type: 'offer.created', subject: { type: 'offer', id: offer.id }, payload: { client_id: alice.user.id } });
    await publish(t.app, t.database.db, {
      type: 'appointment.started',
      subject: { type: 'appointment', id: appointment.id },
      payload: { from: 'scheduled', to: 'in_progress' },
    });
    await publish(t.app, t.database.db, { type: 'payment.succeeded', subject: { type: 'payment', id: payment!.id }, payload: { from: 'processing', to: 'succeeded' } });
    for (const seen of [...offersSeen, ...movesSeen, ...paymentsSeen]) await waitFor(() => (seen.length ? seen : undefined));
    expect(paymentsSeen[0]![0]).toMatchObject({ id: payment!.id, amount_cents: 12_000, status: 'succeeded' });
    expect(offersSeen[0]![0]).toMatchObject({ id: offer.id, service_request_id: request.id, prestataire_id: prestataire.user.id, amount_cents: 12_000 });
    expect(movesSeen[1]![0]).toMatchObject({ id: appointment.id, client_id: alice.user.id, status: appointment.status });
  });

  it("sends messages, read receipts and typing made through the API on the conversation's channel (DESIGN.md §8), to all but the sender's connection", async () => {
    const prestataire = await createPrestataire(t, { status: 'validated' });
    const conversationId = await openConversation(alice, prestataire);
    const name = `private-conversation.${conversationId}`;
    const sender = await connect(alice.token);
    const senderSeen = collect(await subscribe(sender, name), 'message.created');
    const channel = await subscribe(await connect(prestataire.token), name);
    const messages = collect(channel, 'message.created');
    const reads = collect(channel, 'messages.read');
    const typing = collect(channel, 'typing');

    const api = (user: TestUser, path: string, payload: object, socketId?: string) =>
      t.app.inject({
        method: 'POST',
        url: `/api/v1/conversations/${conversationId}${path}`,
        headers: { ...bearer(user.token), ...(socketId ? { 'x-socket-id': socketId } : {}) },
        payload,
      });
    const sent = await api(alice, '/messages', { body: 'Bonjour' }, sender.connection.socket_id);
    expect(sent.statusCode, sent.body).toBe(201);
    const listed = await t.app.inject({ url: `/api/v1/conversations/${conversationId}/messages`, headers: bearer(prestataire.token) });
    const read = await api(prestataire, '/messages/read', {});
    expect(read.statusCode, read.body).toBe(200);
    expect((await api(alice, '/typing', {})).statusCode).toBe(200);
    await deliverAll(t, ['realtime']);

    for (const seen of [messages, reads, typing]) await waitFor(() => (seen.length ? seen : undefined));
    expect(messages).toEqual([listed.json().data[0]]);
    expect(reads).toEqual([read.json().data]);
    expect(typing).toEqual([{ conversation_id: conversationId, user_id: alice.user.id }]);
    await settle();
    expect(senderSeen).toEqual([]);
  });

  it('leaves out the connection whose X-Socket-ID the event carries, and only that one', async () => {
    const sender = await connect(alice.token);
    const other = await connect(alice.token);
    const senderChannel = await subscribe(sender, `private-user.${alice.user.id}`);
    const otherChannel = await subscribe(other, `private-user.${alice.user.id}`);
    const senderSeen = collect(senderChannel, 'notification.created');
    const otherSeen = collect(otherChannel, 'notification.created');
    await publish(t.app, t.database.db, {
      type: 'notification.created',
      subject: { type: 'notification', id: 2 },
      payload: { id: 2, user_id: alice.user.id, socket_id: sender.connection.socket_id },
    });
    await waitFor(() => (otherSeen.length ? otherSeen : undefined));
    await settle();
    expect(otherSeen).toEqual([{ id: 2, user_id: alice.user.id }]);
    expect(senderSeen).toEqual([]);
  });

  it("refuses another user's channel at the auth endpoint, and a forged signature at the socket", async () => {
    const pusher = await connect(alice.token);
    await expect(subscribe(pusher, `private-user.${bob.user.id}`)).rejects.toMatchObject({ detail: { status: 403 } });
    // A client that signs for itself, without the secret, gets Pusher's 4009.
    const forger = await connect(alice.token, port, () => `${KEY}:${'0'.repeat(64)}`);
    const errors: unknown[] = [];
    forger.connection.bind('error', (error: unknown) => errors.push(error));
    await expect(subscribe(forger, `private-user.${bob.user.id}`)).rejects.toMatchObject({ detail: { type: 'AuthError', status: 401 } });
    expect(errors).toContainEqual(expect.objectContaining({ data: expect.objectContaining({ code: 4009 }) }));
    // A signature made for another socket is no better.
    const stolen = await connect(alice.token, port, (channel) => authFor(KEY, SECRET, '1.1', channel));
    await expect(subscribe(stolen, `private-user.${bob.user.id}`)).rejects.toMatchObject({ detail: { status: 401 } });
  });

  it('relays client events on private channels to the other subscribers only', async () => {
    const one = await connect(alice.token);
    const two = await connect(alice.token);
    const first = await subscribe(one, `private-user.${alice.user.id}`);
    const second = await subscribe(two, `private-user.${alice.user.id}`);
    const echoed = collect(first, 'client-typing');
    const relayed = collect(second, 'client-typing');
    expect(first.trigger('client-typing', { user_id: alice.user.id })).toBe(true);
    await waitFor(() => (relayed.length ? relayed : undefined));
    await settle();
    expect(relayed).toEqual([{ user_id: alice.user.id }]);
    expect(echoed).toEqual([]);
  });
});

describe('the Pusher protocol frame by frame', () => {
  it('establishes the connection with a socket id and the activity timeout, and answers ping with pong', async () => {
    const s = await rawSocket();
    expect(s.frames[0]!.event).toBe('pusher:connection_established');
    expect(JSON.parse(s.frames[0]!.data as string)).toEqual({ socket_id: expect.stringMatching(/^\d+\.\d+$/), activity_timeout: 120 });
    s.send('pusher:ping', {});
    await waitFor(() => s.frames.find((f) => f.event === 'pusher:pong'));
  });

  it('refuses client events on public channels and unsubscribed ones, and limits their rate', async () => {
    const s = await rawSocket();
    s.send('pusher:subscribe', { channel: 'lobby' });
    await waitFor(() => s.frames.find((f) => f.event === 'pusher_internal:subscription_succeeded' && f.channel === 'lobby'));
    const listener = await rawSocket();
    listener.send('pusher:subscribe', { channel: 'lobby' });
    await waitFor(() => listener.frames.find((f) => f.event === 'pusher_internal:subscription_succeeded'));
    s.send('client-hello', { x: 1 }, 'lobby');
    s.send('client-hello', { x: 1 }, `private-user.${alice.user.id}`);
    await waitFor(() => (s.frames.filter((f) => f.event === 'pusher:error').length === 2 ? true : undefined));
    await settle();
    expect(listener.frames.some((f) => f.event === 'client-hello')).toBe(false);

    const channel = `private-user.${alice.user.id}`;
    const writer = await rawSocket();
    writer.send('pusher:subscribe', { channel, auth: authFor(KEY, SECRET, writer.socketId, channel) });
    const reader = await rawSocket();
    reader.send('pusher:subscribe', { channel, auth: authFor(KEY, SECRET, reader.socketId, channel) });
    await waitFor(() => (reader.frames.some((f) => f.event === 'pusher_internal:subscription_succeeded') && writer.frames.some((f) => f.event === 'pusher_internal:subscription_succeeded') ? true : undefined));
    for (let i = 0; i < 15; i++) writer.send('client-tick', { i }, channel);
    await waitFor(() => writer.frames.find((f) => f.event === 'pusher:error' && (f.data as { code: number }).code === 4301));
    await settle(300);
    expect(reader.frames.filter((f) => f.event === 'client-tick')).toHaveLength(10);
  });

  it("refuses an unknown app key or protocol with Pusher's codes", async () => {
    const wrongKey = await rawSocket('/app/nope?protocol=7');
    expect(wrongKey.frames[0]).toMatchObject({ event: 'pusher:error', data: { code: 4001 } });
    expect((await wrongKey.closed).code).toBe(4001);
    const oldProtocol = await rawSocket(`/app/${KEY}?protocol=3`);
    expect(oldProtocol.frames[0]).toMatchObject({ event: 'pusher:error', data: { code: 4007 } });
    const noProtocol = await rawSocket(`/app/${KEY}`);
    expect(noProtocol.frames[0]).toMatchObject({ event: 'pusher:error', data: { code: 4008 } });
  });

  it('answers a malformed frame with pusher:error and keeps the connection', async () => {
    const s = await rawSocket();
    s.ws.send('not json');
    s.send('pusher:subscribe', { channel: 'bad channel!' });
    await waitFor(() => (s.frames.filter((f) => f.event === 'pusher:error').length === 2 ? true : undefined));
    s.send('pusher:ping', {});
    await waitFor(() => s.frames.find((f) => f.event === 'pusher:pong'));
  });

  it('answers a plain GET of the socket route with 400', async () => {
    const res = await t.app.inject({ method: 'GET', url: `/app/${KEY}?protocol=7` });
    expectError(res, 400, 'bad_request');
  });
});

describe('activity and X-Socket-ID', () => {
  it('pings a silent connection after the activity timeout, and drops it with 4201 when no pong comes', async () => {
    const quick = await buildTestApp({ OUTBOX_INTERVAL_MS: '0', PUSHER_ACTIVITY_TIMEOUT: '1' });
    try {
      await quick.app.listen({ port: 0, host: '127.0.0.1' });
      const s = await rawSocket(`/app/${KEY}?protocol=7`, (quick.app.server.address() as { port: number }).port);
      expect(JSON.parse(s.frames[0]!.data as string)).toMatchObject({ activity_timeout: 1 });
      await waitFor(() => s.frames.find((f) => f.event === 'pusher:ping'), 5000);
      expect((await s.closed).code).toBe(4201);
    } finally {
      await quick.close();
    }
  }, 60_000);

  it("reads a request's X-Socket-ID when it is a socket id, and ignores anything else", () => {
    const request = (value?: string) => ({ headers: value === undefined ? {} : { 'x-socket-id': value } }) as Parameters<typeof socketIdOf>[0];
    expect(socketIdOf(request('123.456'))).toBe('123.456');
    expect(socketIdOf(request('123'))).toBeUndefined();
    expect(socketIdOf(request('1.2; drop'))).toBeUndefined();
    expect(socketIdOf(request())).toBeUndefined();
  });
});

describe.skipIf(!process.env.TEST_DATABASE_URL)('across instances (PostgreSQL)', () => {
  let second: FastifyInstance;
  let secondDb: DatabaseHandle<Schema>;
  let secondPort: number;

  beforeAll(async () => {
    secondDb = await createDatabase({ url: t.database.url, schema, migrationsFolder, extensions, poolSize: 3 });
    second = await buildApp(t.config, { database: secondDb, logger: false });
    await second.listen({ port: 0, host: '127.0.0.1' });
    secondPort = (second.server.address() as { port: number }).port;
  }, 60_000);
  afterAll(async () => {
    await second?.close();
    await secondDb?.close();
  });

  it('delivers to a subscriber of one instance what is published through the other, big payloads included', async () => {
    const pusher = await connect(alice.token, secondPort);
    const channel = await subscribe(pusher, `private-user.${alice.user.id}`);
    const seen = collect(channel, 'notification.created') as { id: number; body: string }[];
    await publish(t.app, t.database.db, { type: 'notification.created', subject: { type: 'notification', id: 3 }, payload: { id: 3, user_id: alice.user.id, body: 'court' } });
    const long = 'long '.repeat(3000);
    await publish(t.app, t.database.db, { type: 'notification.created', subject: { type: 'notification', id: 4 }, payload: { id: 4, user_id: alice.user.id, body: long } });
    await waitFor(() => (seen.length === 2 ? seen : undefined));
    expect(seen.map((n) => n.id)).toEqual([3, 4]);
    expect(seen[1]!.body).toBe(long);
  });

  it('delivers a message sent through the REST API of one instance to a pusher-js subscriber of the other', async () => {
    const prestataire = await createPrestataire(t, { status: 'validated' });
    const conversationId = await openConversation(alice, prestataire);
    const channel = await subscribe(await connect(prestataire.token, secondPort), `private-conversation.${conversationId}`);
    const seen = collect(channel, 'message.created') as { body: string; conversation_id: number }[];
    const sent = await t.app.inject({
      method: 'POST',
      url: `/api/v1/conversations/${conversationId}/messages`,
      headers: bearer(alice.token),
      payload: { body: "J'arrive à 14 h" },
    });
    expect(sent.statusCode, sent.body).toBe(201);
    await deliverAll(t, ['realtime']);
    await waitFor(() => (seen.length ? seen : undefined));
    expect(seen).toEqual([expect.objectContaining({ body: "J'arrive à 14 h", conversation_id: conversationId })]);
  });

  it('relays a client event to the subscribers of the other instance', async () => {
    const here = await subscribe(await connect(alice.token), `private-user.${alice.user.id}`);
    const there = await subscribe(await connect(alice.token, secondPort), `private-user.${alice.user.id}`);
    const seen = collect(there, 'client-typing');
    here.trigger('client-typing', { from: 'first instance' });
    await waitFor(() => (seen.length ? seen : undefined));
    expect(seen).toEqual([{ from: 'first instance' }]);
  });
});
