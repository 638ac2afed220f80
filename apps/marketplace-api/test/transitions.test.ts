import { withTransaction } from '@repo/db';
import { AppError } from '@repo/http';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activityLog, prestataireProfiles, users, type ValidationStatus } from '../src/db/schema/index.js';
import { systemActor, type Actor } from '../src/lib/context.js';
import { defineStateMachine, transition, type Move } from '../src/lib/transitions.js';
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
