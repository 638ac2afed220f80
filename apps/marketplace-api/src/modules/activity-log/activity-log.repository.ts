import type { DbTx } from '../../db/index.js';
import { activityLog } from '../../db/schema/index.js';
import type { RequestContext } from '../../lib/context.js';

export interface ActivityEntry {
  /** A verb in dotted form: `user.status_changed`, `prestataire.validated`. */
  action: string;
  subjectType: string;
  subjectId: number | null;
  before?: Record<string, unknown> | null;
  after?: Record<string, unknown> | null;
}

/** Records who did what to which subject, in the caller's transaction so it commits with the change. */
export async function recordActivity(db: DbTx, ctx: RequestContext, entry: ActivityEntry) {
  await db.insert(activityLog).values({
    actorId: ctx.actor?.userId ?? null,
    actorRole: ctx.actor?.role ?? 'system',
    action: entry.action,
    subjectType: entry.subjectType,
    subjectId: entry.subjectId,
    before: entry.before ?? null,
    after: entry.after ?? null,
    ip: ctx.ip || null,
    requestId: ctx.requestId,
  });
}
