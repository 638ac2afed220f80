import { EventEmitter } from 'node:events';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { and, eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { projectMembers, tailTickets } from '../src/db/schema/index.js';
import { createLogEvents, type IngestedLog } from '../src/modules/logs/log-events.js';
import { createProjectAccess } from '../src/modules/projects/projects.service.js';
import { createTailService, type TailSocket } from '../src/modules/tail/tail.service.js';
import { addMember, buildTestApp, createProject, createUser, type TestApp, type TestUser, type LogBody } from './helpers.js';

interface LogData extends LogBody {
  pattern_id: number | null;
}
type Frame = { type: 'ready' } | { type: 'log'; data: LogData };

interface Tail {
  ws: WebSocket;
  frames: Frame[];
  pings: number;
  /** Messages of the log frames received so far, in order. */
  messages(): string[];
  closed: Promise<{ code: number; reason: string }>;
}
type Connection = { kind: 'open'; tail: Tail } | { kind: 'refused'; status: number; body: { error: string; message: string; errors?: Record<string, string[]> } };

/** A test app listening on a port, its log output kept. */
async function listeningApp(env: Record<string, string>) {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk.toString());
      done();
    },
  });
  const t = await buildTestApp(env, { logger: { level: 'info', stream } });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = t.app.server.address() as AddressInfo;
  return { t, base: `ws://127.0.0.1:${port}`, logOutput: () => chunks.join('') };
}

/** Opens a WebSocket; a refused upgrade answers the HTTP status and envelope instead. */
function connect(base: string, path: string, headers: Record<string, string> = {}): Promise<Connection> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${base}${path}`, { headers });
    const tail: Tail = {
      ws,
      frames: [],
      pings: 0,
      messages: () => tail.frames.flatMap((f) => (f.type === 'log' ? [f.data.message] : [])),
      closed: new Promise((done) => ws.once('close', (code, reason) => done({ code, reason: reason.toString() }))),
    };
    ws.on('message', (data: Buffer, isBinary) => {
      expect(isBinary).toBe(false);
      tail.frames.push(JSON.parse(data.toString()) as Frame);
    });
    ws.on('ping', () => (tail.pings += 1));
    ws.once('open', () => resolve({ kind: 'open', tail }));
    ws.once('unexpected-response', (_request, response) => {
      let body = '';
      response.on('data', (chunk: Buffer) => (body += chunk.toString()));
      response.on('end', () => resolve({ kind: 'refused', status: response.statusCode ?? 0, body: JSON.parse(body) }));
    });
    ws.once('error', reject);
  });
}

async function open(base: string, path: string, headers: Record<string, string> = {}): Promise<Tail> {
  const connection = await connect(base, path, headers);
  if (connection.kind !== 'open') throw new Error(`refused: ${connection.status} ${JSON.stringify(connection.body)}`);
  // Subscribed once `ready` arrives: logs posted from then on are streamed.
  await expect.poll(() => connection.tail.frames[0]).toEqual({ type: 'ready' });
  return connection.tail;
}

async function refused(base: string, path: string, headers: Record<string, string> = {}) {
  const connection = await connect(base, path, headers);
  if (connection.kind !== 'refused') {
    connection.tail.ws.terminate();
    throw new Error('the upgrade was accepted');
  }
  return connection;
}

const ticketsPath = (projectId: number) => `/api/projects/${projectId}/logs/tail/tickets`;
const tailPath = (projectId: number, query = '') => `/api/projects/${projectId}/logs/tail${query ? `?${query}` : ''}`;

describe('GET /api/projects/{project_id}/logs/tail (WebSocket)', () => {
  let t: TestApp;
  let base: string;
  let logOutput: () => string;
  let owner: TestUser;
  let member: TestUser;
  let stranger: TestUser;
  let projectId: number;
  let otherProjectId: number;
  const opened: Tail[] = [];

  beforeAll(async () => {
    // A beat of 400 ms: a peer whose pong comes after the next beat is cut, and with 100 ms a test
    // process busy for that long (CI, both databases' suites beside it) lost its tail after one ping.
    ({ t, base, logOutput } = await listeningApp({ TAIL_SESSION_CHECK_MS: '100', TAIL_HEARTBEAT_MS: '400' }));
    owner = await createUser(t);
    member = await createUser(t);
    stranger = await createUser(t);
    projectId = (await createProject(t, owner)).id;
    otherProjectId = (await createProject(t, owner)).id;
    await addMember(t, projectId, member);
  });
  afterAll(async () => {
    for (const tail of opened) tail.ws.terminate();
    await t.close();
  });

  async function tailAs(who: TestUser, query = '', id = projectId) {
    const tail = await open(base, tailPath(id, query), who.headers);
    opened.push(tail);
    return tail;
  }

  async function ticketFor(who: TestUser, id = projectId) {
    const response = await t.app.inject({ method: 'POST', url: ticketsPath(id), headers: who.headers });
    expect(response.statusCode, response.body).toBe(201);
    return (response.json() as { data: { ticket: string; expires_at: string } }).data;
  }

  function post(id: number, payload: Record<string, unknown>, who: TestUser = owner) {
    return t.app.inject({ method: 'POST', url: `/api/projects/${id}/logs`, headers: who.headers, payload });
  }

  function postBatch(id: number, entries: Record<string, unknown>[], who: TestUser = owner) {
    return t.app.inject({ method: 'POST', url: `/api/projects/${id}/logs/batch`, headers: who.headers, payload: { logs: entries } });
  }

  describe('happy path', () => {
    it('streams to a member each log submitted afterwards, single and batch, as the API presents it', async () => {
      const tail = await tailAs(member);

      const single = await post(projectId, { level: 'error', message: 'payment timeout', source: 'api', context: { order: 42 } });
      expect(single.statusCode, single.body).toBe(201);
      const stored = (single.json() as { data: LogData }).data;
      await expect.poll(() => tail.frames).toEqual([{ type: 'ready' }, { type: 'log', data: stored }]);

      const batch = await postBatch(
        projectId,
        [
          { level: 'info', message: 'retry 1' },
          { level: 'warning', message: 'retry 2', timestamp: '2026-01-02T05:04:05+02:00' },
          { level: 'debug', message: 'retry 3' },
        ],
        member,
      );
      expect(batch.statusCode, batch.body).toBe(201);
      await expect.poll(() => tail.messages()).toEqual(['payment timeout', 'retry 1', 'retry 2', 'retry 3']);
      const retry2 = tail.frames.find((f) => f.type === 'log' && f.data.message === 'retry 2');
      expect(retry2).toMatchObject({
        type: 'log',
        data: { project_id: projectId, level: 'warning', timestamp: '2026-01-02T03:04:05.000Z', context: null, source: null, pattern_id: null },
      });
    });

    it('streams logs shipped with an ingest key too', async () => {
      const tail = await tailAs(member);
      const created = await t.app.inject({
        method: 'POST',
        url: `/api/projects/${projectId}/ingest-keys`,
        headers: owner.headers,
        payload: { name: 'ci' },
      });
      expect(created.statusCode, created.body).toBe(201);
      const { key } = (created.json() as { data: { key: string } }).data;

      const response = await t.app.inject({
        method: 'POST',
        url: `/api/projects/${projectId}/logs`,
        headers: { 'x-ingest-key': key },
        payload: { level: 'info', message: 'from CI' },
      });
      expect(response.statusCode, response.body).toBe(201);
      await expect.poll(() => tail.messages()).toEqual(['from CI']);
    });

    it("applies the list's filters: level and a case-insensitive, literal search", async () => {
      const tail = await tailAs(member, 'level=error&search=TimeOut');
      await postBatch(projectId, [
        { level: 'info', message: 'timeout in info' },
        { level: 'error', message: 'db TIMEOUT' },
        { level: 'error', message: 'unrelated error' },
        { level: 'warning', message: 'timeout warning' },
      ]);
      await post(projectId, { level: 'error', message: 'Timeout again' });
      // Frames arrive in publication order: the last log's arrival proves the others were filtered out.
      await expect.poll(() => tail.messages()).toEqual(['db TIMEOUT', 'Timeout again']);

      const literal = await tailAs(member, `search=${encodeURIComponent('50%_')}`);
      await postBatch(projectId, [{ level: 'info', message: 'at 50x done' }, { level: 'info', message: 'at 50%_ done' }, { level: 'info', message: 'end' }]);
      await post(projectId, { level: 'info', message: 'again 50%_' });
      await expect.poll(() => literal.messages()).toEqual(['at 50%_ done', 'again 50%_']);
    });

    it('applies the source filter, exactly, with the others', async () => {
      const tail = await tailAs(member, 'source=api&level=error');
      await postBatch(projectId, [
        { level: 'error', message: 'from web', source: 'web' },
        { level: 'error', message: 'from api', source: 'api' },
        { level: 'info', message: 'api info', source: 'api' },
        { level: 'error', message: 'no source' },
        { level: 'error', message: 'upper API', source: 'API' },
      ]);
      await post(projectId, { level: 'error', message: 'api again', source: 'api' });
      await expect.poll(() => tail.messages()).toEqual(['from api', 'api again']);
    });

    it('applies from_date and to_date to the timestamp of each log', async () => {
      const tail = await tailAs(member, 'from_date=2026-01-01T00:00:00Z&to_date=2026-01-31T23:59:59Z');
      await postBatch(projectId, [
        { level: 'info', message: 'december', timestamp: '2025-12-31T23:59:59Z' },
        { level: 'info', message: 'january', timestamp: '2026-01-15T12:00:00Z' },
        { level: 'info', message: 'february', timestamp: '2026-02-01T00:00:00Z' },
        { level: 'info', message: 'last second', timestamp: '2026-01-31T23:59:59Z' },
      ]);
      await expect.poll(() => tail.messages()).toEqual(['january', 'last second']);
    });

    it("streams only the project's own logs", async () => {
      const tail = await tailAs(owner);
      await post(otherProjectId, { level: 'error', message: 'elsewhere' });
      await post(projectId, { level: 'error', message: 'here' });
      await expect.poll(() => tail.messages()).toEqual(['here']);
    });

    it('pings the client on its heartbeat and stays open while it answers', async () => {
      const tail = await tailAs(member);
      await expect.poll(() => tail.pings, { timeout: 5000 }).toBeGreaterThanOrEqual(3);
      expect(tail.ws.readyState).toBe(WebSocket.OPEN);
    });
  });

  describe('errors, answered over HTTP before the upgrade', () => {
    it('422 for filters the list refuses', async () => {
      const badLevel = await refused(base, tailPath(projectId, 'level=fatal'), member.headers);
      expect(badLevel.status).toBe(422);
      expect(badLevel.body.error).toBe('validation_error');
      expect(Object.keys(badLevel.body.errors ?? {})).toEqual(['level']);

      const backwards = await refused(base, tailPath(projectId, 'from_date=2026-02-01T00:00:00Z&to_date=2026-01-01T00:00:00Z'), member.headers);
      expect(backwards.status).toBe(422);
      expect(backwards.body.errors).toHaveProperty('to_date');

      const blankSource = await refused(base, tailPath(projectId, 'source=%20%20'), member.headers);
      expect(blankSource.status).toBe(422);
      expect(Object.keys(blankSource.body.errors ?? {})).toEqual(['source']);

      const noZone = await refused(base, tailPath(projectId, 'from_date=2026-02-01T00:00:00'), member.headers);
      expect(noZone.status).toBe(422);
      expect(noZone.body.errors).toHaveProperty('from_date');

      const badId = await refused(base, '/api/projects/abc/logs/tail', member.headers);
      expect(badId.status).toBe(422);
      expect(badId.body.errors).toHaveProperty('project_id');
    });

    it('400 for a plain GET: the route speaks WebSocket only', async () => {
      const response = await t.app.inject({ method: 'GET', url: tailPath(projectId), headers: member.headers });
      expect(response.statusCode).toBe(400);
      expect(response.json()).toMatchObject({ error: 'bad_request' });
    });
  });

  describe('security', () => {
    it('401 without a token, with a bad one, or with one in a header that is not Bearer', async () => {
      const attempts: Record<string, string>[] = [{}, { authorization: 'Bearer not-a-jwt' }, { authorization: `Basic ${member.token}` }];
      for (const headers of attempts) {
        const response = await refused(base, tailPath(projectId), headers);
        expect(response.status).toBe(401);
        expect(response.body.error).toBe('unauthenticated');
      }
      const badQuery = await refused(base, tailPath(projectId, 'access_token=not-a-jwt'));
      expect(badQuery.status).toBe(401);
    });

    it('404 for a signed-in stranger and for a project that does not exist, as for any project route', async () => {
      for (const id of [projectId, 999_999]) {
        const response = await refused(base, tailPath(id), stranger.headers);
        expect(response.status).toBe(404);
        expect(response.body).toMatchObject({ error: 'not_found', message: 'Project not found' });
      }
    });

    it('takes the token from access_token (browsers cannot set headers), and never logs it', async () => {
      const viaQuery = await open(base, tailPath(projectId, `level=error&access_token=${member.token}`));
      opened.push(viaQuery);
      // The parameter as the query parser decodes it: an encoded name is the same parameter.
      const encoded = await open(base, tailPath(projectId, `access%5Ftoken=${member.token}`));
      opened.push(encoded);
      await post(projectId, { level: 'error', message: 'seen through the query token' });
      await expect.poll(() => viaQuery.messages()).toEqual(['seen through the query token']);
      await expect.poll(() => encoded.messages()).toEqual(['seen through the query token']);

      // Other places a token in a URL could reach the log: a refused tail, a route that takes no
      // query token, and an upgrade to a route with no WebSocket handler (logged by the plugin).
      expect((await refused(base, tailPath(projectId, `access_token=${stranger.token}`))).status).toBe(404);
      expect((await t.app.inject({ method: 'GET', url: `/api/projects?access_token=${owner.token}` })).statusCode).toBe(401);
      const health = await connect(base, `/api/health?access_token=${owner.token}`);
      if (health.kind === 'open') await health.tail.closed;

      const output = logOutput();
      for (const token of [member.token, stranger.token, owner.token]) expect(output).not.toContain(token);
      // The URLs themselves are still logged, with the value redacted.
      expect(output).toContain(`/logs/tail?level=error&access_token=[REDACTED]`);
      expect(output).toContain('access%5Ftoken=[REDACTED]');
      expect(output).toContain('/api/health?access_token=[REDACTED]');
    });

    it('opens with a single-use ticket from POST …/logs/tail/tickets, and never logs it', async () => {
      const issued = await ticketFor(member);
      expect(issued.ticket).toMatch(/^ltt_[A-Za-z0-9_-]{43}$/);
      const ttl = Date.parse(issued.expires_at) - Date.now();
      expect(ttl).toBeGreaterThan(25_000);
      expect(ttl).toBeLessThanOrEqual(31_000);
      // Only its hash is stored.
      const stored = await t.database.db.select().from(tailTickets);
      expect(JSON.stringify(stored)).not.toContain(issued.ticket);

      const tail = await open(base, tailPath(projectId, `level=error&ticket=${issued.ticket}`));
      opened.push(tail);
      await post(projectId, { level: 'error', message: 'seen through a ticket' });
      await expect.poll(() => tail.messages()).toEqual(['seen through a ticket']);

      const used = await refused(base, tailPath(projectId, `ticket=${issued.ticket}`));
      expect(used.status).toBe(401);
      expect(used.body.error).toBe('unauthenticated');
      const output = logOutput();
      expect(output).not.toContain(issued.ticket);
      expect(output).toContain('/logs/tail?level=error&ticket=[REDACTED]');
    });

    it('401 for a ticket used, expired, for another project, unknown or malformed; 404 to issue one for a stranger', async () => {
      const other = await ticketFor(owner, otherProjectId);
      expect((await refused(base, tailPath(projectId, `ticket=${other.ticket}`))).status).toBe(401);
      // Presented where it does not belong, it is spent all the same.
      expect((await refused(base, tailPath(otherProjectId, `ticket=${other.ticket}`))).status).toBe(401);

      const expired = await ticketFor(member);
      await t.database.db.update(tailTickets).set({ expiresAt: sql`now() - interval '1 second'` });
      expect((await refused(base, tailPath(projectId, `ticket=${expired.ticket}`))).status).toBe(401);

      for (const ticket of ['ltt_unknown', 'not-a-ticket', `ltt_${'a'.repeat(200)}`]) {
        const response = await refused(base, tailPath(projectId, `ticket=${ticket}`));
        expect(response.status).toBe(401);
        expect(response.body.error).toBe('unauthenticated');
      }

      for (const id of [projectId, 999_999]) {
        const response = await t.app.inject({ method: 'POST', url: ticketsPath(id), headers: stranger.headers });
        expect(response.statusCode).toBe(404);
        expect(response.json()).toMatchObject({ error: 'not_found', message: 'Project not found' });
      }
      expect((await t.app.inject({ method: 'POST', url: ticketsPath(projectId) })).statusCode).toBe(401);
      const badId = await t.app.inject({ method: 'POST', url: '/api/projects/abc/logs/tail/tickets', headers: member.headers });
      expect(badId.statusCode).toBe(422);
      expect(badId.json()).toMatchObject({ error: 'validation_error', errors: { project_id: expect.any(Array) } });

      // Issuing deletes the expired tickets.
      await ticketFor(member);
      const left = await t.database.db.select().from(tailTickets).where(sql`${tailTickets.expiresAt} <= now()`);
      expect(left).toEqual([]);
    });

    it('opens one tail only when five upgrades race with the same ticket', async () => {
      const issued = await ticketFor(member);
      const results = await Promise.all(Array.from({ length: 5 }, () => connect(base, tailPath(projectId, `ticket=${issued.ticket}`))));
      const statuses = results.map((r) => {
        if (r.kind === 'open') {
          opened.push(r.tail);
          return 'open';
        }
        return r.status;
      });
      expect(statuses.sort()).toEqual([401, 401, 401, 401, 'open']);
    });

    it('the Authorization header wins over a ticket, which stays unused', async () => {
      const issued = await ticketFor(member);
      expect((await refused(base, tailPath(projectId, `ticket=${issued.ticket}`), stranger.headers)).status).toBe(404);
      opened.push(await open(base, tailPath(projectId, `ticket=${issued.ticket}`)));
    });

    it('a ticket names its session: one redeemed after logout is refused, and logout closes its tail with 4401', async () => {
      const leaving = await createUser(t);
      await addMember(t, projectId, leaving);
      const first = await ticketFor(leaving);
      const second = await ticketFor(leaving);
      const tail = await open(base, tailPath(projectId, `ticket=${first.ticket}`));
      opened.push(tail);

      const logout = await t.app.inject({ method: 'POST', url: '/api/auth/logout', headers: leaving.headers });
      expect(logout.statusCode, logout.body).toBe(200);
      await expect(tail.closed).resolves.toEqual({ code: 4401, reason: 'Session ended' });
      expect((await refused(base, tailPath(projectId, `ticket=${second.ticket}`))).status).toBe(401);
    });

    it('closes with 4401 once the session is revoked by logout', async () => {
      const leaving = await createUser(t);
      await addMember(t, projectId, leaving);
      const tail = await tailAs(leaving);

      const logout = await t.app.inject({ method: 'POST', url: '/api/auth/logout', headers: leaving.headers });
      expect(logout.statusCode, logout.body).toBe(200);

      await expect(tail.closed).resolves.toEqual({ code: 4401, reason: 'Session ended' });
      // Nothing more is sent to it.
      await post(projectId, { level: 'error', message: 'after logout' });
      expect(tail.messages()).toEqual([]);
    });

    it('closes with 4404 once the user is no longer a member', async () => {
      const removed = await createUser(t);
      await addMember(t, projectId, removed);
      const tail = await tailAs(removed);

      await t.database.db
        .delete(projectMembers)
        .where(and(eq(projectMembers.projectId, projectId), eq(projectMembers.userId, removed.id)));

      await expect(tail.closed).resolves.toEqual({ code: 4404, reason: 'Project not found' });
    });
  });
});

describe('live tail back-pressure over a real socket', () => {
  it('drops a client that stops reading with 1013 instead of buffering for it', async () => {
    const { t, base } = await listeningApp({ TAIL_MAX_BUFFERED_BYTES: String(64 * 1024) });
    try {
      const owner = await createUser(t);
      const projectId = (await createProject(t, owner)).id;
      const tail = await open(base, tailPath(projectId), owner.headers);

      // The client stops reading: the kernel's buffers fill, then the server's send buffer grows.
      tail.ws.pause();
      const big = 'x'.repeat(60_000);
      const batches = 12;
      for (let i = 0; i < batches; i++) {
        const response = await t.app.inject({
          method: 'POST',
          url: `/api/projects/${projectId}/logs/batch`,
          headers: owner.headers,
          payload: { logs: Array.from({ length: 40 }, (_, j) => ({ level: 'info', message: `${i}.${j} ${big}` })) },
        });
        expect(response.statusCode).toBe(201);
        // Let each delivery reach the socket before the next batch.
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      tail.ws.resume();

      await expect(tail.closed).resolves.toMatchObject({ code: 1013 });
      // Some logs were delivered before the drop, not all of them.
      expect(tail.messages().length).toBeGreaterThan(0);
      expect(tail.messages().length).toBeLessThan(batches * 40);
    } finally {
      await t.close();
    }
  });
});

/** A stand-in for a `ws` socket: what the service sends, and the events it would get. */
class FakeSocket extends EventEmitter implements TailSocket {
  readonly OPEN = 1;
  readyState = 1;
  bufferedAmount = 0;
  sent: string[] = [];
  pings = 0;
  /** Whether pings are answered, as a live peer's library does. */
  answerPings = true;
  closedWith?: { code: number; reason: string };
  terminated = false;
  send(data: string) {
    this.sent.push(data);
  }
  ping() {
    this.pings += 1;
    if (this.answerPings) setImmediate(() => this.emit('pong'));
  }
  close(code: number, reason: string) {
    this.closedWith = { code, reason };
    this.readyState = 3;
    this.emit('close');
  }
  terminate() {
    this.terminated = true;
    this.readyState = 3;
    this.emit('close');
  }
}

describe('tail service', () => {
  let t: TestApp;
  let user: TestUser;
  let projectId: number;

  beforeAll(async () => {
    t = await buildTestApp();
    user = await createUser(t);
    projectId = (await createProject(t, user)).id;
  });
  afterAll(() => t.close());

  async function setUp(options: { heartbeatMs?: number; maxBufferedBytes?: number } = {}) {
    const events = createLogEvents();
    const tail = createTailService({
      db: t.database.db,
      access: createProjectAccess({ db: t.database.db }),
      events,
      sessions: t.app.auth.store,
      heartbeatMs: options.heartbeatMs ?? 60_000,
      sessionCheckMs: 60_000,
      maxBufferedBytes: options.maxBufferedBytes ?? 1024,
    });
    const session = await t.app.auth.store.create({ userId: user.id, ip: '127.0.0.1' });
    const actor = { userId: user.id, sessionId: session.id, role: 'user', requestId: 'test' };
    const warnings: string[] = [];
    const log = { info: () => {}, warn: (_obj: object, msg?: string) => void warnings.push(msg ?? '') };
    const socket = new FakeSocket();
    tail.open(socket, actor, projectId, {}, log);
    return { events, socket, warnings };
  }

  function ingested(message: string): IngestedLog {
    const now = new Date();
    return { id: 1, projectId, level: 'info', message, context: null, source: null, timestamp: now, receivedAt: now };
  }

  const delivered = () => new Promise((resolve) => setImmediate(resolve));

  it('removes its subscription when the socket closes', async () => {
    const { events, socket } = await setUp();
    expect(events.listenerCount(projectId)).toBe(1);
    socket.emit('close');
    expect(events.listenerCount(projectId)).toBe(0);
  });

  it('drops a consumer whose send buffer is over the limit with 1013, and stops sending to it', async () => {
    const { events, socket, warnings } = await setUp({ maxBufferedBytes: 1024 });
    events.publish(projectId, [ingested('kept up')]);
    await delivered();
    expect(socket.sent.map((f) => (JSON.parse(f) as { type: string }).type)).toEqual(['ready', 'log']);

    socket.bufferedAmount = 1025;
    events.publish(projectId, [ingested('too late')]);
    await delivered();
    expect(socket.closedWith).toEqual({ code: 1013, reason: 'Too far behind; reconnect' });
    expect(socket.sent).toHaveLength(2);
    expect(events.listenerCount(projectId)).toBe(0);
    expect(warnings).toEqual(['live tail: slow consumer dropped']);
  });

  it('keeps a peer that answers pings, and terminates it once it stops', async () => {
    const { events, socket } = await setUp({ heartbeatMs: 20 });
    await expect.poll(() => socket.pings, { timeout: 2000 }).toBeGreaterThanOrEqual(4);
    expect(socket.terminated).toBe(false);

    socket.answerPings = false;
    await expect.poll(() => socket.terminated, { timeout: 2000 }).toBe(true);
    expect(events.listenerCount(projectId)).toBe(0);
  });
});
