import { withTransaction } from '@repo/db';
import { AppError } from '@repo/http';
import { and, desc, eq, inArray } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activityLog, prestataireProfiles, users, type ValidationStatus } from '../src/db/schema/index.js';
import { systemActor, type Actor } from '../src/lib/context.js';
import { defineStateMachine, transition, transitionMany, type BulkMove, type Move, type MoveEntry, type MoveEvent, type MoveTargets, type TransitionDeps } from '../src/lib/transitions.js';
import { createActivityRecorder } from '../src/modules/activity-log/activity-log.recorder.js';
import { createOutbox } from '../src/modules/outbox/outbox.js';
import { eventsOf } from '../src/modules/outbox/outbox.repository.js';
import { validationMachine } from '../src/modules/prestataire-vetting/admin-review.repository.js';
import { buildTestApp, createAdmin, createClient, createPrestataire, usersService, type TestApp } from './helpers.js';

let t: TestApp;
let admin: Actor;

beforeAll(async () => {
  t = await buildTestApp();
  const a = await createAdmin(t);
  admin = { kind: 'user', userId: a.user.id, role: 'admin', sessionId: 'test-session', requestId: 'req-transition', ip: '192.0.2.7' };
});
afterAll(async () => {
  await t.close();
});

const validate: Move<typeof prestataireProfiles, ValidationStatus> = {
  verb: 'validate',
  from: ['pending', 'suspended'],
  to: 'validated',
  action: 'prestataire.validated',
};

function move(actor: Actor | typeof systemActor, id: number, m: Move<typeof prestataireProfiles, ValidationStatus> = validate) {
  const db = t.database.db;
  return transition(db, { recorder: createActivityRecorder({ db }), outbox: createOutbox({ db }), actor }, validationMachine, id, m);
}

async function stateOf(userId: number) {
  const [row] = await t.database.db.select().from(prestataireProfiles).where(eq(prestataireProfiles.userId, userId));
  return row?.validationStatus;
}

async function entries(userId: number, action = 'prestataire.validated') {
  return t.database.db
    .select()
    .from(activityLog)
    .where(and(eq(activityLog.subjectId, userId), eq(activityLog.action, action)));
}

/** The AppError a promise rejects with. */
async function failure(promise: Promise<unknown>): Promise<AppError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AppError);
  return error as AppError;
}

describe('transition', () => {
  it('moves the row, returns it with the row and state before, and logs the move with its actor', async () => {
    const p = await createPrestataire(t);
    const moved = await move(admin, p.user.id, { ...validate, set: () => ({ validationNote: 'Complete' }), details: { checked_by: 'team' } });
    expect(moved.before).toBe('pending');
    expect(moved.previous.validationStatus).toBe('pending');
    expect(moved.row).toMatchObject({ userId: p.user.id, validationStatus: 'validated', validationNote: 'Complete' });
    expect(moved.row.updatedAt.getTime()).toBeGreaterThanOrEqual(moved.previous.updatedAt.getTime());
    const [entry] = await entries(p.user.id);
    expect(entry).toMatchObject({
      actorId: admin.userId,
      actorRole: 'admin',
      ip: '192.0.2.7',
      requestId: 'req-transition',
      subjectType: 'user',
      subjectId: p.user.id,
      before: { validation_status: 'pending', validation_note: null },
      after: { validation_status: 'validated', validation_note: 'Complete', checked_by: 'team' },
    });
    const events = await eventsOf(t.database.db, 'user', p.user.id);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      type: 'prestataire.validated',
      actorId: admin.userId,
      payload: { from: 'pending', to: 'validated', validation_status: 'validated', checked_by: 'team' },
    });
  });

  it('answers 409 with the current state, and changes and logs nothing, when the move does not leave from it', async () => {
    const p = await createPrestataire(t, { status: 'rejected' });
    const error = await failure(move(admin, p.user.id));
    expect(error.statusCode).toBe(409);
    expect(error.code).toBe('conflict');
    expect(error.extra).toEqual({ current_status: 'rejected' });
    expect(error.message).toBe('Cannot validate a prestataire whose validation status is rejected (allowed from: pending, suspended)');
    expect(await stateOf(p.user.id)).toBe('rejected');
    expect(await entries(p.user.id)).toEqual([]);
  });

  it('answers 404 for no row, and for a row outside the machine’s scope (a deleted prestataire)', async () => {
    const client = await createClient(t);
    expect((await failure(move(admin, client.user.id))).statusCode).toBe(404);
    expect((await failure(move(admin, 2_000_000_000))).statusCode).toBe(404);
    const deleted = await createPrestataire(t);
    await usersService(t).anonymise(systemActor, deleted.user.id);
    const error = await failure(move(admin, deleted.user.id));
    expect(error).toMatchObject({ statusCode: 404, message: 'Prestataire not found' });
    expect(await stateOf(deleted.user.id)).toBe('pending');
  });

  it('lets exactly one of ten concurrent identical moves win; the others answer 409 with the state it left', async () => {
    const p = await createPrestataire(t);
    const results = await Promise.allSettled(Array.from({ length: 10 }, () => move(admin, p.user.id)));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const losers = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as AppError] : []));
    expect(losers).toHaveLength(9);
    for (const loser of losers) expect(loser).toMatchObject({ statusCode: 409, extra: { current_status: 'validated' } });
    expect(await entries(p.user.id)).toHaveLength(1);
  });

  it('writes its entry in the caller’s transaction: both roll back together', async () => {
    const p = await createPrestataire(t);
    await expect(
      withTransaction(t.database.db, async (tx) => {
        await transition(tx, { recorder: createActivityRecorder({ db: t.database.db }), outbox: createOutbox({ db: t.database.db }), actor: admin }, validationMachine, p.user.id, validate);
        throw new Error('a later step of the same state change failed');
      }),
    ).rejects.toThrow('a later step');
    expect(await stateOf(p.user.id)).toBe('pending');
    expect(await entries(p.user.id)).toEqual([]);
    expect(await eventsOf(t.database.db, 'user', p.user.id)).toEqual([]);
  });

  it('records the platform’s own moves with the role system and no user', async () => {
    const p = await createPrestataire(t, { status: 'validated' });
    await move(systemActor, p.user.id, { verb: 'suspend', from: ['validated'], to: 'suspended', action: 'prestataire.suspended' });
    const [entry] = await entries(p.user.id, 'prestataire.suspended');
    expect(entry).toMatchObject({ actorId: null, actorRole: 'system', ip: null, requestId: 'system' });
  });

  it('refuses a machine whose state column is not of its table', () => {
    expect(() =>
      defineStateMachine({
        table: prestataireProfiles,
        key: prestataireProfiles.userId,
        state: users.status,
        states: ['active'],
        label: 'Prestataire',
        noun: 'prestataire',
        stateName: 'status',
        subjectType: 'user',
        audit: () => ({}),
      }),
    ).toThrow('the state column is not a column of its table');
  });
});

describe('transitionMany', () => {
  const validateAll: BulkMove<typeof prestataireProfiles, ValidationStatus> = {
    from: ['pending', 'suspended'],
    to: 'validated',
    action: (before) => (before === 'suspended' ? 'prestataire.reinstated' : 'prestataire.validated'),
    details: { checked_by: 'timer' },
  };

  /** The real recorder and outbox, counting their calls. */
  function countingDeps(actor: TransitionDeps['actor'] = systemActor) {
    const db = t.database.db;
    const recorder = createActivityRecorder({ db });
    const outbox = createOutbox({ db });
    const calls = { record: 0, recordMany: [] as number[], publish: [] as number[] };
    const deps: TransitionDeps = {
      actor,
      recorder: {
        record: (...args) => {
          calls.record += 1;
          return recorder.record(...args);
        },
        recordMany: (a, entries: readonly MoveEntry[], tx) => {
          calls.recordMany.push(entries.length);
          return recorder.recordMany(a, entries, tx);
        },
      },
      outbox: {
        publish: (a, events: MoveEvent | MoveEvent[], tx) => {
          calls.publish.push(Array.isArray(events) ? events.length : 1);
          return outbox.publish(a, events, tx);
        },
      },
    };
    return { deps, calls };
  }

  /** The machine's own events of a prestataire (the notifications they lead to are left out). */
  const movesOf = async (userId: number) => (await eventsOf(t.database.db, 'user', userId)).filter((e) => e.type.startsWith('prestataire.'));

  function moveMany(targets: MoveTargets, deps = countingDeps().deps, m = validateAll) {
    return transitionMany(t.database.db, deps, validationMachine, targets, m);
  }

  it('moves each targeted row in a from state, and logs and publishes each with one insert of each kind', async () => {
    const pending = await createPrestataire(t);
    const suspended = await createPrestataire(t, { status: 'suspended' });
    const { deps, calls } = countingDeps(admin);
    const moved = await moveMany([pending.user.id, suspended.user.id], deps);

    expect(moved.map((m) => [m.row.userId, m.before, m.row.validationStatus]).sort()).toEqual(
      [
        [pending.user.id, 'pending', 'validated'],
        [suspended.user.id, 'suspended', 'validated'],
      ].sort(),
    );
    const reinstated = moved.find((m) => m.row.userId === suspended.user.id)!;
    expect(reinstated.previous).toMatchObject({ userId: suspended.user.id, validationStatus: 'suspended' });
    expect(reinstated.row.updatedAt.getTime()).toBeGreaterThanOrEqual(reinstated.previous.updatedAt.getTime());
    expect(await stateOf(pending.user.id)).toBe('validated');
    expect(await stateOf(suspended.user.id)).toBe('validated');
    expect(calls).toEqual({ record: 0, recordMany: [2], publish: [2] });

    const [entry] = await entries(suspended.user.id, 'prestataire.reinstated');
    expect(entry).toMatchObject({
      actorId: admin.userId,
      actorRole: 'admin',
      requestId: 'req-transition',
      subjectType: 'user',
      subjectId: suspended.user.id,
      before: { validation_status: 'suspended', validation_note: null },
      after: { validation_status: 'validated', validation_note: null, checked_by: 'timer' },
    });
    expect(await entries(pending.user.id)).toHaveLength(1);
    for (const [p, type, from] of [
      [pending, 'prestataire.validated', 'pending'],
      [suspended, 'prestataire.reinstated', 'suspended'],
    ] as const) {
      const events = await movesOf(p.user.id);
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({ type, actorId: admin.userId, payload: { from, to: 'validated', validation_status: 'validated', checked_by: 'timer' } });
    }
  });

  it('skips, and neither logs nor publishes, a row in another state or outside the machine’s scope', async () => {
    const pending = await createPrestataire(t);
    const rejected = await createPrestataire(t, { status: 'rejected' });
    const deleted = await createPrestataire(t);
    await usersService(t).anonymise(systemActor, deleted.user.id);
    const client = await createClient(t);
    const { deps, calls } = countingDeps();
    const moved = await moveMany([pending.user.id, rejected.user.id, deleted.user.id, client.user.id, 2_000_000_000], deps);

    expect(moved.map((m) => m.row.userId)).toEqual([pending.user.id]);
    expect(await stateOf(rejected.user.id)).toBe('rejected');
    expect(await stateOf(deleted.user.id)).toBe('pending');
    expect(calls).toEqual({ record: 0, recordMany: [1], publish: [1] });
    for (const id of [rejected.user.id, deleted.user.id]) {
      expect(await entries(id)).toEqual([]);
      expect(await movesOf(id)).toEqual([]);
    }
  });

  it('skips a row a user moved while the bulk move waited for its lock, and leaves it as the user did', async () => {
    const [a, b] = [await createPrestataire(t), await createPrestataire(t)];
    let locked!: () => void;
    const hasLock = new Promise<void>((resolve) => (locked = resolve));
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    // A user's move holds b's row until it commits.
    const userMove = withTransaction(t.database.db, async (tx) => {
      await transition(tx, { recorder: createActivityRecorder({ db: t.database.db }), outbox: createOutbox({ db: t.database.db }), actor: admin }, validationMachine, b.user.id, {
        verb: 'reject',
        from: ['pending'],
        to: 'rejected',
        action: 'prestataire.rejected',
      });
      locked();
      await gate;
    });
    await hasLock;
    const bulk = moveMany([a.user.id, b.user.id]);
    // On PostgreSQL the bulk move is now waiting for b's lock (PGlite runs one transaction at a time).
    await new Promise((resolve) => setTimeout(resolve, 200));
    release();
    await userMove;
    const moved = await bulk;

    expect(moved.map((m) => m.row.userId)).toEqual([a.user.id]);
    expect(await stateOf(a.user.id)).toBe('validated');
    expect(await stateOf(b.user.id)).toBe('rejected');
    expect(await entries(b.user.id)).toEqual([]);
    expect((await movesOf(b.user.id)).map((e) => e.type)).toEqual(['prestataire.rejected']);
  });

  it('takes the rows a condition selects, the first `limit` in `orderBy`; nothing to move is no statement and no error', async () => {
    const ps = [await createPrestataire(t), await createPrestataire(t), await createPrestataire(t)];
    const ids = ps.map((p) => p.user.id);
    const moved = await moveMany({ where: inArray(prestataireProfiles.userId, ids), orderBy: [desc(prestataireProfiles.userId)], limit: 2 });
    expect(moved.map((m) => m.row.userId).sort((x, y) => x - y)).toEqual(ids.slice(1));
    expect(await stateOf(ids[0]!)).toBe('pending');

    const { deps, calls } = countingDeps();
    expect(await moveMany([], deps)).toEqual([]);
    expect(await moveMany(ids.slice(1), deps)).toEqual([]);
    expect(calls).toEqual({ record: 0, recordMany: [], publish: [] });
  });

  it.skipIf(!process.env.TEST_DATABASE_URL)('with skipLocked, leaves the rows another transaction holds to it (PostgreSQL)', async () => {
    const [a, b] = [await createPrestataire(t), await createPrestataire(t)];
    let locked!: () => void;
    const hasLock = new Promise<void>((resolve) => (locked = resolve));
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const holder = withTransaction(t.database.db, async (tx) => {
      await tx.select().from(prestataireProfiles).where(eq(prestataireProfiles.userId, b.user.id)).for('update');
      locked();
      await gate;
    });
    await hasLock;
    try {
      const moved = await moveMany({ where: inArray(prestataireProfiles.userId, [a.user.id, b.user.id]), skipLocked: true });
      expect(moved.map((m) => m.row.userId)).toEqual([a.user.id]);
    } finally {
      release();
      await holder;
    }
    expect(await stateOf(b.user.id)).toBe('pending');
  });

  it('writes in the caller’s transaction: the moves, entries and events roll back together', async () => {
    const p = await createPrestataire(t);
    await expect(
      withTransaction(t.database.db, async (tx) => {
        await transitionMany(tx, countingDeps().deps, validationMachine, [p.user.id], validateAll);
        throw new Error('a later step of the same batch failed');
      }),
    ).rejects.toThrow('a later step');
    expect(await stateOf(p.user.id)).toBe('pending');
    expect(await entries(p.user.id)).toEqual([]);
    expect(await eventsOf(t.database.db, 'user', p.user.id)).toEqual([]);
  });
});
