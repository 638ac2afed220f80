import { queryRows, runClaimedWork } from '@repo/db';
import { Counter } from '@repo/http';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scanBatch, SLICE_BYTES, validatePlain, type BatchText } from '../src/modules/logs/batch-text.js';
import { createLogEvents } from '../src/modules/logs/log-events.js';
import { createIngestMetrics } from '../src/modules/logs/logs.metrics.js';
import { createLogsService, type LogWriter } from '../src/modules/logs/logs.service.js';
import { createLogWrites } from '../src/modules/logs/logs.writes.js';
import type { ProjectAccess } from '../src/modules/projects/projects.service.js';
import { buildTestApp, createProject, createUser, type TestApp, type TestUser } from './helpers.js';

// Requests that queue for a writer are stored together, one statement per project
// (createLogWrites): each must answer as if it had been stored alone.

let t: TestApp;
let owner: TestUser;

beforeAll(async () => {
  t = await buildTestApp();
  owner = await createUser(t);
});
afterAll(() => t.close());

const rows = <T extends Record<string, unknown>>(query: ReturnType<typeof sql>) => queryRows<T>(t.database.db, query);

function cut(entries: unknown[]): BatchText {
  const batch = scanBatch(Buffer.from(JSON.stringify({ logs: entries })));
  if (!batch || !validatePlain(batch)) throw new Error('not a plain batch');
  return batch;
}

/** A service over a queue of `writers` (one by default), the statements that stored requests counted, and a way to hold a writer. */
function queued(writers = 1) {
  const statements: number[] = [];
  const writes = createLogWrites({ db: t.database.db, writers, onStatement: (requests) => statements.push(requests) });
  const access = { assertMember: async () => ({ role: 'owner' }) } as unknown as ProjectAccess;
  const ingest = createIngestMetrics({ counter: (config) => new Counter({ ...config, registers: [] }) });
  const service = createLogsService({ db: t.database.db, plannedOnce: t.database.db, access, events: createLogEvents(), ingest, writes });
  /** Runs `requests` while the writer is busy, until all of them wait, then frees it; answers their outcomes. */
  async function together<T>(requests: (() => Promise<T>)[]) {
    let release = () => {};
    const held = writes.alone(() => new Promise<void>((resolve) => (release = resolve)));
    const outcomes = Promise.allSettled(requests.map((request) => request()));
    while (writes.waiting < requests.length) await new Promise((resolve) => setTimeout(resolve, 1));
    release();
    await held;
    return outcomes;
  }
  return { service, writes, statements, together };
}

const writer = () => ({ kind: 'user' as const, actor: { userId: owner.id, role: 'user', requestId: 'test' } }) as unknown as LogWriter;

const value = <T>(outcome: PromiseSettledResult<T> | undefined): T => {
  if (outcome?.status !== 'fulfilled') throw new Error(`a request failed: ${String(outcome?.status === 'rejected' ? outcome.reason : 'none')}`);
  return outcome.value;
};

describe('requests queued for a writer', () => {
  it('are stored by one statement, each answered with its own logs and ids', async () => {
    const project = await createProject(t, owner);
    const { service, statements, together } = queued();
    const at = '2026-11-30T10:00:00.123Z';
    const outcomes = await together<unknown>([
      () => service.create(writer(), project.id, { level: 'error', message: 'first alone', context: { order: 1 }, timestamp: new Date(at) }),
      () => service.createBatch(writer(), project.id, cut([{ level: 'info', message: 'text a' }, { level: 'debug', message: 'text b', source: 'api' }])),
      () => service.create(writer(), project.id, { level: 'warning', message: 'second alone' }),
      () => service.createBatch(writer(), project.id, cut([{ level: 'info', message: 'parsed', timestamp: '2026-11-30T10:00:01.000456Z' }])),
    ]);
    expect(statements).toEqual([4]);
    const first = value(outcomes[0]) as { id: number; message: string };
    const second = value(outcomes[2]) as { id: number; message: string };
    expect(value(outcomes[1])).toEqual({ accepted: 2 });
    expect(value(outcomes[3])).toEqual({ accepted: 1 });
    // Each single log's id is its own row's.
    const stored = await rows<{ id: number; level: string; message: string; context: unknown; source: string | null; at: string; received: string }>(
      sql`select id::int as id, level, message, context, source, to_char("timestamp" at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as at,
                 to_char(received_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as received
            from logs where project_id = ${project.id} order by id`,
    );
    expect(stored.map((r) => r.message)).toEqual(['first alone', 'text a', 'text b', 'second alone', 'parsed']);
    expect(stored.find((r) => r.id === first.id)?.message).toBe('first alone');
    expect(stored.find((r) => r.id === second.id)?.message).toBe('second alone');
    expect(first.message).toBe('first alone');
    const byMessage = Object.fromEntries(stored.map((r) => [r.message, r]));
    expect(byMessage['first alone']).toMatchObject({ level: 'error', context: { order: 1 }, at: '2026-11-30T10:00:00.123000Z' });
    expect(byMessage['text b']).toMatchObject({ level: 'debug', source: 'api', context: null });
    // A timestamp is kept to the millisecond, as a Date holds it (the text's too); a missing one is the time received.
    expect(byMessage['parsed']?.at).toBe('2026-11-30T10:00:01.000000Z');
    expect(byMessage['text a']?.at).toBe(byMessage['text a']?.received);
    expect(byMessage['second alone']?.at).toBe(byMessage['second alone']?.received);
  });

  it('for other projects are stored by statements of their own', async () => {
    const [a, b] = [await createProject(t, owner), await createProject(t, owner)];
    const { service, statements, together } = queued();
    const post = (projectId: number, message: string) => () => service.create(writer(), projectId, { level: 'info', message });
    const outcomes = await together<unknown>([post(a.id, 'a1'), post(b.id, 'b1'), post(a.id, 'a2'), post(b.id, 'b2'), post(a.id, 'a3')]);
    expect(outcomes.every((o) => o.status === 'fulfilled')).toBe(true);
    expect(statements).toEqual([3, 2]);
    const stored = await rows<{ project_id: number; message: string }>(
      sql`select project_id, message from logs where project_id in (${a.id}, ${b.id}) order by id`,
    );
    expect(stored).toEqual([
      { project_id: a.id, message: 'a1' },
      { project_id: a.id, message: 'a2' },
      { project_id: a.id, message: 'a3' },
      { project_id: b.id, message: 'b1' },
      { project_id: b.id, message: 'b2' },
    ]);
  });

  it('are stored together within a slice of entries, the rest by statements of their own', async () => {
    const project = await createProject(t, owner);
    const { service, statements, together } = queued();
    // Three batches of about 0.4 slice each: two fit in one statement, the third does not.
    const big = (tag: string) => cut(Array.from({ length: 40 }, (_, i) => ({ level: 'info', message: `${tag} ${i} ${'x'.repeat(Math.floor((0.4 * SLICE_BYTES) / 40))}` })));
    const outcomes = await together<unknown>([() => service.createBatch(writer(), project.id, big('a')), () => service.createBatch(writer(), project.id, big('b')), () => service.createBatch(writer(), project.id, big('c'))]);
    expect(outcomes.map((o) => value(o))).toEqual([{ accepted: 40 }, { accepted: 40 }, { accepted: 40 }]);
    expect(statements).toEqual([2, 1]);
  });

  it('answer 404 each, storing nothing, when the project went while they waited', async () => {
    const project = await createProject(t, owner);
    const { service, statements, together } = queued();
    let deleted = false;
    const outcomes = await together<unknown>([
      async () => {
        // Deleted once every request is queued, before the writer is free.
        await t.database.db.execute(sql`delete from projects where id = ${project.id}`);
        deleted = true;
        return service.create(writer(), project.id, { level: 'info', message: 'late one' });
      },
      () => service.createBatch(writer(), project.id, cut([{ level: 'info', message: 'late batch' }])),
    ]);
    expect(deleted).toBe(true);
    expect(outcomes.map((o) => (o.status === 'rejected' ? (o.reason as { code?: string }).code : 'stored'))).toEqual(['not_found', 'not_found']);
    expect(statements).toEqual([2]);
    expect(await rows(sql`select id from logs where project_id = ${project.id}`)).toEqual([]);
  });

  it('where the database refuses one request’s entries, fail that request alone', async () => {
    const project = await createProject(t, owner);
    const { service, statements, together } = queued();
    // A rule of the database's own that no validation knows of: a row trigger on logs.
    await t.database.db.execute(sql`create function refuse_marked_log() returns trigger language plpgsql as $$
      begin
        if new.message = 'refused by the database' then raise exception 'refused: %', new.message using errcode = '23514'; end if;
        return new;
      end $$`);
    await t.database.db.execute(sql`create trigger refuse_marked_log before insert on logs for each row execute function refuse_marked_log()`);
    try {
      const outcomes = await together<unknown>([
        () => service.create(writer(), project.id, { level: 'info', message: 'kept before' }),
        () => service.createBatch(writer(), project.id, cut([{ level: 'info', message: 'fine' }, { level: 'info', message: 'refused by the database' }])),
        () => service.create(writer(), project.id, { level: 'info', message: 'kept after' }),
      ]);
      expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      // The statement of all three failed; each was then stored alone, and the refused one stored nothing.
      expect(statements).toEqual([1, 1]);
      const stored = await rows<{ message: string }>(sql`select message from logs where project_id = ${project.id} order by id`);
      expect(stored.map((r) => r.message)).toEqual(['kept before', 'kept after']);
    } finally {
      await t.database.db.execute(sql`drop trigger refuse_marked_log on logs`);
      await t.database.db.execute(sql`drop function refuse_marked_log()`);
    }
  });

  it('never merge the work of an Idempotency-Key, whose statements are its own', async () => {
    const project = await createProject(t, owner);
    const { service, statements, together } = queued();
    const work = { id: '00000000-0000-4000-8000-000000000000', owner: 'test', commits: 0, uncertain: false };
    const outcomes = await together<unknown>([
      () => service.create(writer(), project.id, { level: 'info', message: 'plain' }),
      () => runClaimedWork(work, () => service.createBatch(writer(), project.id, cut([{ level: 'info', message: 'claimed' }]))),
      () => service.create(writer(), project.id, { level: 'info', message: 'plain too' }),
    ]);
    expect(outcomes.every((o) => o.status === 'fulfilled')).toBe(true);
    // The two plain requests together; the claim's batch by a statement of its own, counted on its claim.
    expect(statements).toEqual([2]);
    expect(work.commits).toBe(1);
    const stored = await rows<{ message: string }>(sql`select message from logs where project_id = ${project.id} order by message`);
    expect(stored.map((r) => r.message)).toEqual(['claimed', 'plain', 'plain too']);
  });

  it('answer an insert that throws before its first await, and free its writer for the next', async () => {
    const project = await createProject(t, owner);
    const { service, writes } = queued();
    await expect(
      writes.alone(() => {
        throw new Error('refused before any statement');
      }),
    ).rejects.toThrow('refused before any statement');
    // The only writer is free again: the next request is stored.
    await expect(service.create(writer(), project.id, { level: 'info', message: 'after' })).resolves.toMatchObject({ message: 'after' });
    expect(writes.waiting).toBe(0);
  });
});

describe('a second writer', () => {
  /**
   * A service over a queue of two writers, the first held busy by an insert of its own until
   * `release()`; `whenWaiting(n)` resolves once n requests wait (or rejects after two seconds).
   */
  async function oneBusy() {
    const { service, writes, statements } = queued(2);
    let release: (() => void) | undefined;
    const held = writes.alone(() => new Promise<void>((resolve) => (release = resolve)));
    while (!release) await new Promise((resolve) => setTimeout(resolve, 1));
    const whenWaiting = async (n: number) => {
      const deadline = Date.now() + 2000;
      while (writes.waiting !== n) {
        if (Date.now() > deadline) throw new Error(`${writes.waiting} requests wait, not ${n}`);
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
    };
    return { service, writes, statements, held, release: () => release?.(), whenWaiting };
  }
  const aWhile = () => new Promise((resolve) => setTimeout(resolve, 50));

  it('is not started while the busy one can take all that waits in its next statement', async () => {
    const project = await createProject(t, owner);
    const { service, writes, statements, held, release, whenWaiting } = await oneBusy();
    const answers = Promise.all([1, 2, 3].map((i) => service.create(writer(), project.id, { level: 'info', message: `steady ${i}` })));
    await whenWaiting(3);
    await aWhile();
    // Still all waiting for the busy writer: no insert at once beside it.
    expect(writes.waiting).toBe(3);
    expect(statements).toEqual([]);
    release();
    await Promise.all([held, answers]);
    expect(statements).toEqual([3]);
  });

  it('starts for what one statement cannot take: more than a slice of entries, or another project', async () => {
    const [a, b] = [await createProject(t, owner), await createProject(t, owner)];
    const { service, writes, statements, held, release, whenWaiting } = await oneBusy();
    // Two batches of 0.6 slice each for one project: two statements.
    const big = (tag: string) => cut(Array.from({ length: 40 }, (_, i) => ({ level: 'info', message: `${tag} ${i} ${'x'.repeat(Math.floor((0.6 * SLICE_BYTES) / 40))}` })));
    const batches = [service.createBatch(writer(), a.id, big('a')), service.createBatch(writer(), a.id, big('b'))];
    // One of them stored by the second writer while the first is still busy.
    await expect(Promise.race(batches)).resolves.toEqual({ accepted: 40 });
    expect(statements).toEqual([1]);
    await whenWaiting(1);
    // One small log for each of two projects: two statements again.
    const logs = [service.create(writer(), a.id, { level: 'info', message: 'to a' }), service.create(writer(), b.id, { level: 'info', message: 'to b' })];
    await expect(Promise.race(logs)).resolves.toMatchObject({ level: 'info' });
    release();
    await Promise.all([held, ...batches, ...logs]);
    expect(writes.waiting).toBe(0);
    expect(await rows<{ n: number }>(sql`select count(*)::int as n from logs where project_id in (${a.id}, ${b.id})`)).toEqual([{ n: 82 }]);
  });

  it('starts for a second insert of its own (the work of an Idempotency-Key)', async () => {
    const { writes, held, release, whenWaiting } = await oneBusy();
    const ran: string[] = [];
    const first = writes.alone(async () => void ran.push('first'));
    await whenWaiting(1);
    await aWhile();
    expect(ran).toEqual([]);
    // Two inserts of their own waiting: the second writer takes the first of them.
    const second = writes.alone(async () => void ran.push('second'));
    await first;
    expect(ran).toEqual(['first']);
    // The other waits for a writer's next statement, as the first did alone.
    await whenWaiting(1);
    release();
    await Promise.all([held, second]);
    expect(ran).toEqual(['first', 'second']);
  });
});
