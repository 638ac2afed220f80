import { withTransaction } from '@repo/db';
import { AppError, pageMeta, pageOffset } from '@repo/http';
import type { DbTx } from '../../db/index.js';
import type { ReviewStatus, reviews } from '../../db/schema/index.js';
import type { Actor, Anonymous } from '../../lib/context.js';
import { isUniqueViolation } from '../../lib/db-errors.js';
import { transition, type Move } from '../../lib/transitions.js';
import type { ActivityRecorder } from '../activity-log/index.js';
import type { Outbox } from '../outbox/index.js';
import { findVisible } from '../prestataires/index.js';
import * as repo from './reviews.repository.js';
import type { AdminReviewsQuery, CreateReviewBody, PublicReviewsQuery } from './reviews.schemas.js';

type ReviewMove = Move<typeof reviews, ReviewStatus>;

const alreadyReviewed = () => new AppError('conflict', 'This appointment has already been reviewed');

/**
 * Reviews (DESIGN.md §6): the client of a completed appointment writes one; an administrator
 * approves or rejects it, and may later hide an approved one. Only approved reviews are public, and
 * they alone make the prestataire's `rating_average` / `rating_count`, recomputed in the transaction
 * of every moderation move under the profile's lock, so they stay exact whatever runs concurrently.
 */
export function createReviewsService(deps: { db: DbTx; recorder: ActivityRecorder; outbox: Outbox; now?: () => Date }) {
  const { db, recorder, outbox } = deps;
  const now = deps.now ?? (() => new Date());

  async function view(tx: DbTx, id: number) {
    const found = await repo.findReview(tx, id);
    if (!found) throw AppError.notFound('Review');
    return found;
  }

  /**
   * One moderation move. The profile is locked before the review (always in that order, so two
   * moves of one prestataire cannot deadlock), the review moved through `transition` (locked,
   * conditional, logged, published), then the rating recomputed from the approved reviews.
   */
  function moderate(actor: Actor, id: number, move: ReviewMove) {
    return withTransaction(db, async (tx) => {
      const prestataireId = await repo.prestataireOfReview(tx, id);
      if (prestataireId === undefined) throw AppError.notFound('Review');
      await repo.lockProfile(tx, prestataireId);
      const moved = await transition(tx, { recorder, outbox, actor }, repo.reviewMachine, id, move);
      if (moved.before === 'approved' || moved.row.status === 'approved') await repo.recomputeRating(tx, prestataireId);
      return view(tx, id);
    });
  }

  return {
    /**
     * The client reviews its completed appointment, once. Another role answers 403; an appointment
     * that is not the client's, 404; one not completed, 409 with its status; a second review, 409.
     */
    async create(actor: Actor, appointmentId: number, body: CreateReviewBody) {
      if (actor.role !== 'client') throw new AppError('forbidden', "Only the appointment's client may review it");
      try {
        return await withTransaction(db, async (tx) => {
          const appointment = await repo.findAppointmentForReview(tx, appointmentId);
          if (!appointment || appointment.clientId !== actor.userId) throw AppError.notFound('Appointment');
          if (appointment.status !== 'completed') {
            throw new AppError('conflict', `Only a completed appointment can be reviewed; this one is ${appointment.status}`, {
              extra: { current_status: appointment.status },
            });
          }
          if (await repo.reviewOfAppointment(tx, appointmentId)) throw alreadyReviewed();
          const review = await repo.insertReview(tx, {
            appointmentId,
            clientId: actor.userId,
            prestataireId: appointment.prestataireId,
            rating: body.rating,
            comment: body.comment,
          });
          const subject = { type: repo.reviewMachine.subjectType, id: review.id };
          const facts = repo.reviewMachine.audit(review);
          await recorder.record(actor, 'review.created', subject, { after: facts }, tx);
          await outbox.publish(actor, { type: 'review.created', subject, payload: facts }, tx);
          return view(tx, review.id);
        });
      } catch (error) {
        // Two concurrent first reviews: the unique index lets one in.
        if (isUniqueViolation(error)) throw alreadyReviewed();
        throw error;
      }
    },

    /** The moderation queue, newest first, filtered by status, rating and prestataire. */
    async list(_actor: Actor, query: AdminReviewsQuery) {
      const { rows, total } = await repo.listReviews(
        db,
        { status: query.status, rating: query.rating, prestataireId: query.prestataire_id },
        query.per_page,
        pageOffset(query.page, query.per_page),
      );
      return { rows, meta: pageMeta(query.page, query.per_page, total) };
    },

    /** Publishes a pending review: it counts in the prestataire's rating from now on. */
    approve: (actor: Actor, id: number) =>
      moderate(actor, id, {
        verb: 'approve',
        from: ['pending'],
        to: 'approved',
        action: 'review.approved',
        set: () => ({ moderatedBy: actor.userId, moderatedAt: now(), rejectionReason: null }),
      }),

    /** Refuses a pending review, with the reason. */
    reject: (actor: Actor, id: number, reason: string) =>
      moderate(actor, id, {
        verb: 'reject',
        from: ['pending'],
        to: 'rejected',
        action: 'review.rejected',
        set: () => ({ moderatedBy: actor.userId, moderatedAt: now(), rejectionReason: reason }),
        details: { reason },
      }),

    /** Withdraws an approved review from the public: it no longer counts in the rating. */
    hide: (actor: Actor, id: number, reason: string | null) =>
      moderate(actor, id, {
        verb: 'hide',
        from: ['approved'],
        to: 'hidden',
        action: 'review.hidden',
        set: () => ({ moderatedBy: actor.userId, moderatedAt: now(), rejectionReason: reason }),
        details: reason === null ? undefined : { reason },
      }),

    /**
     * A publicly visible prestataire's approved reviews, newest first, with its rating and the
     * distribution of the ratings. A prestataire the public cannot see answers 404.
     */
    async listPublic(_caller: Actor | Anonymous, prestataireId: number, query: PublicReviewsQuery) {
      if (!(await findVisible(db, prestataireId))) throw AppError.notFound('Prestataire');
      const [{ rows, total }, distribution, rating] = await Promise.all([
        repo.listApproved(db, prestataireId, query.per_page, pageOffset(query.page, query.per_page)),
        repo.approvedDistribution(db, prestataireId),
        repo.ratingOf(db, prestataireId),
      ]);
      const byRating = { '1': 0, '2': 0, '3': 0, '4': 0, '5': 0 };
      for (const { rating: r, n } of distribution) {
        const key = String(r);
        if (key in byRating) byRating[key as keyof typeof byRating] = n;
      }
      return {
        rows,
        meta: {
          ...pageMeta(query.page, query.per_page, total),
          // Two decimals, as search shows it (the column is a single-precision float).
          rating_average: rating?.ratingAverage == null ? null : Math.round(rating.ratingAverage * 100) / 100,
          rating_count: rating?.ratingCount ?? 0,
          rating_distribution: byRating,
        },
      };
    },
  };
}

export type ReviewsService = ReturnType<typeof createReviewsService>;
