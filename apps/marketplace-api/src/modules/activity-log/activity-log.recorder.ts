import type { DbTx } from '../../db/index.js';
import type { Caller } from '../../lib/context.js';
import { insertActivities, insertActivity, type NewActivityEntry } from './activity-log.repository.js';

/** What an entry is about: `{ type: 'user', id: 42 }`. */
export interface ActivitySubject {
  type: string;
  id: number | null;
}

/** The state of the subject before and after the change (only what changed, never secrets). */
export interface ActivityDetails {
  before?: Record<string, unknown> | null;
  after?: Record<string, unknown> | null;
}

/** The actor's columns: a user by id and role; anonymous visitors and the platform by role alone. */
function actorColumns(actor: Caller) {
  switch (actor.kind) {
    case 'user':
      return { actorId: actor.userId, actorRole: actor.role, ip: actor.ip || null };
    case 'anonymous':
      return { actorId: null, actorRole: 'anonymous', ip: actor.ip || null };
    case 'system':
      return { actorId: null, actorRole: 'system', ip: null };
  }
}

/**
 * The one writer of the activity log, built once with the app and handed to the services that
 * record. Given the caller's transaction, the entry commits or rolls back with the change it records.
 */
export function createActivityRecorder(deps: { db: DbTx }) {
  const entry = (actor: Caller, action: string, subject: ActivitySubject, details: ActivityDetails): NewActivityEntry => ({
    ...actorColumns(actor),
    action,
    subjectType: subject.type,
    subjectId: subject.id,
    before: details.before ?? null,
    after: details.after ?? null,
    requestId: actor.requestId,
  });
  return {
    /** Records who (`actor`) did what (`action`, dotted: `user.status_changed`) to which subject. */
    async record(actor: Caller, action: string, subject: ActivitySubject, details: ActivityDetails = {}, tx?: DbTx) {
      await insertActivity(tx ?? deps.db, entry(actor, action, subject, details));
    },

    /** Records several entries of one actor (a bulk move's, one per row) in one statement. */
    async recordMany(actor: Caller, entries: readonly { action: string; subject: ActivitySubject; details: ActivityDetails }[], tx?: DbTx) {
      await insertActivities(
        tx ?? deps.db,
        entries.map((e) => entry(actor, e.action, e.subject, e.details)),
      );
    },
  };
}

export type ActivityRecorder = ReturnType<typeof createActivityRecorder>;

/** An account as the subject of an entry. */
export const userSubject = (id: number): ActivitySubject => ({ type: 'user', id });
