import { sqlState, withTransaction } from '@repo/db';
import { AppError, pageMeta, pageOffset } from '@repo/http';
import type { FastifyBaseLogger } from 'fastify';
import type { DbTx } from '../../db/index.js';
import type { Broadcast, BroadcastAudience, Notification } from '../../db/schema/index.js';
import type { Mailer } from '../../integrations/mail/mailer.js';
import type { PushSender } from '../../integrations/push/push.js';
import type { Actor } from '../../lib/context.js';
import type { ActivityRecorder } from '../activity-log/index.js';
import { presentNotification } from '../notifications/index.js';
import { broadcastMail } from './broadcasts.mail.js';
import * as repo from './broadcasts.repository.js';

export interface NewBroadcast {
  audience: BroadcastAudience;
  city_id?: number;
  title: string;
  body: string;
  send_email: boolean;
  data?: Record<string, unknown>;
}

/**
 * The error as the back office reads it: the driver's own message (SQLSTATE and text), not the
 * query wrapper's, which quotes the statement and its parameters.
 */
function describeFailure(error: unknown): string {
  let root: unknown = error;
  for (let depth = 0; depth < 4 && root instanceof Error && root.cause instanceof Error; depth++) root = root.cause;
  const message = root instanceof Error ? root.message : String(root);
  const state = sqlState(error);
  return (state ? `SQLSTATE ${state}: ${message}` : message).slice(0, 1000);
}

/** What one batch did: the broadcast after it, and how many users it reached. */
export interface BatchOutcome {
  broadcast: Broadcast;
  notified: number;
}

/**
 * A database error that sending the same batch again would meet again: the broadcast's own values
 * are refused (SQLSTATE class 22, data exception; 23502 not null and 23514 check violations).
 * Anything else (a lost connection, a timeout, a deadlock, a recipient deleted meanwhile: 23503) is
 * retried on the next pass.
 */
function isPermanent(error: unknown): boolean {
  const state = sqlState(error);
  return state !== undefined && (state.startsWith('22') || state === '23502' || state === '23514');
}

/**
 * Broadcasts from the back office: an in-app notification to every user of an audience, pushed to
 * their browsers, and e-mailed when asked. `deliverNext` sends one batch; the job
 * (jobs/broadcasts.ts) calls it until nothing is left.
 *
 * Delivery guarantees: each batch's notifications and the cursor move in one transaction, and a
 * unique index allows one notification per user and broadcast, so a user is notified in-app
 * exactly once whatever crashes or concurrent workers do. Push and e-mail go out after that commit,
 * once: a crash between the commit and the sends loses them for that batch (at most once), never
 * sends them twice.
 */
export function createBroadcastsService(deps: {
  db: DbTx;
  recorder: ActivityRecorder;
  mailer: Mailer;
  /** Web push; none when VAPID keys are not configured (the in-app notification still lands). */
  push?: PushSender;
  batchSize: number;
  log: Pick<FastifyBaseLogger, 'warn'>;
}) {
  const { db } = deps;

  async function pushTo(created: Notification[]) {
    const { push } = deps;
    if (!push || created.length === 0) return;
    const byUser = new Map(created.map((n) => [n.userId, JSON.stringify(presentNotification(n))]));
    const subscriptions = await repo.webPushSubscriptions(db, [...byUser.keys()]);
    await Promise.all(
      subscriptions.map(async (s) => {
        const payload = byUser.get(s.userId);
        if (!s.keys || payload === undefined) return;
        const outcome = await push.send({ endpoint: s.endpoint, keys: s.keys }, payload);
        if (outcome === 'gone') await repo.deleteDevice(db, s.id);
        else if (outcome === 'failed') deps.log.warn({ device: s.id }, 'broadcast web push failed');
      }),
    );
  }

  return {
    /** Queues a broadcast; its recipients are counted now, the job sends it. */
    async create(actor: Actor, input: NewBroadcast): Promise<Broadcast> {
      const cityId = input.city_id ?? null;
      return withTransaction(db, async (tx) => {
        if (cityId !== null && !(await repo.cityExists(tx, cityId))) throw AppError.validation({ city_id: ['Unknown city'] });
        const totalRecipients = await repo.countRecipients(tx, input.audience, cityId);
        const broadcast = await repo.insertBroadcast(tx, {
          audience: input.audience,
          cityId,
          title: input.title,
          body: input.body,
          sendEmail: input.send_email,
          data: input.data ?? null,
          totalRecipients,
          createdBy: actor.userId,
        });
        await deps.recorder.record(
          actor,
          'broadcast.created',
          { type: 'broadcast', id: broadcast.id },
          { after: { audience: input.audience, city_id: cityId, title: input.title, send_email: input.send_email, total_recipients: totalRecipients } },
          tx,
        );
        return broadcast;
      });
    },

    async list(_actor: Actor, page: number, perPage: number) {
      const { rows, total } = await repo.listBroadcasts(db, perPage, pageOffset(page, perPage));
      return { rows, meta: pageMeta(page, perPage, total) };
    },

    async get(_actor: Actor, id: number): Promise<Broadcast> {
      const broadcast = await repo.findBroadcast(db, id);
      if (!broadcast) throw AppError.notFound('Broadcast');
      return broadcast;
    },

    /**
     * Sends the next batch of one broadcast still to send (null when there is none, or when other
     * workers hold them all): notifications and the cursor in one transaction, then push and e-mail.
     * A failed batch is rolled back and retried on the next pass; an error it would meet again marks
     * the broadcast `failed` with it.
     */
    async deliverNext(): Promise<BatchOutcome | null> {
      let claimed: number | undefined;
      let batch: { broadcast: Broadcast; recipients: repo.Recipient[]; created: Notification[] } | null;
      try {
        batch = await withTransaction(db, async (tx) => {
          const broadcast = await repo.claimPending(tx);
          if (!broadcast) return null;
          claimed = broadcast.id;
          const recipients = await repo.recipientsAfter(tx, broadcast, deps.batchSize);
          const created = await repo.insertNotifications(tx, broadcast, recipients);
          const updated = await repo.advance(tx, broadcast.id, {
            lastUserId: recipients.at(-1)?.id ?? broadcast.lastUserId,
            sent: created.length,
            completed: recipients.length < deps.batchSize,
          });
          return { broadcast: updated, recipients, created };
        });
      } catch (error) {
        if (claimed !== undefined) {
          await repo.recordFailure(db, claimed, describeFailure(error), isPermanent(error));
        }
        throw error;
      }
      if (!batch) return null;

      const { broadcast, recipients, created } = batch;
      // Committed: the in-app notifications stand whatever happens to the push.
      await pushTo(created).catch((error: unknown) => deps.log.warn({ err: error, broadcast: broadcast.id }, 'broadcast web push failed'));
      if (broadcast.sendEmail) {
        const notified = new Set(created.map((n) => n.userId));
        for (const r of recipients) {
          if (notified.has(r.id)) deps.mailer.send(broadcastMail, { email: r.email, lang: r.lang }, { firstName: r.firstName, title: broadcast.title, body: broadcast.body });
        }
      }
      return { broadcast, notified: created.length };
    },
  };
}

export type BroadcastsService = ReturnType<typeof createBroadcastsService>;
