import { AppError, pageMeta, pageOffset } from '@repo/http';
import type { DbTx } from '../../db/index.js';
import type { Actor } from '../../lib/context.js';
import * as repo from './notifications.repository.js';
import type { NotificationsQuery } from './notifications.schemas.js';

/** A user's inbox: every query is scoped to the actor's own notifications (anyone else's: 404). */
export function createNotificationsService(deps: { db: DbTx }) {
  const { db } = deps;
  return {
    async list(actor: Actor, query: NotificationsQuery) {
      const { rows, total, unread } = await repo.listNotifications(
        db,
        actor.userId,
        query.unread ?? false,
        query.per_page,
        pageOffset(query.page, query.per_page),
      );
      return { rows, meta: { ...pageMeta(query.page, query.per_page, total), unread_count: unread } };
    },

    async markRead(actor: Actor, id: number) {
      const row = await repo.markRead(db, actor.userId, id);
      if (!row) throw AppError.notFound('Notification');
      return row;
    },

    async markAllRead(actor: Actor) {
      return repo.markAllRead(db, actor.userId);
    },

    async remove(actor: Actor, id: number) {
      if (!(await repo.deleteOne(db, actor.userId, id))) throw AppError.notFound('Notification');
    },

    async removeAll(actor: Actor) {
      return repo.deleteAll(db, actor.userId);
    },
  };
}

export type NotificationsService = ReturnType<typeof createNotificationsService>;
