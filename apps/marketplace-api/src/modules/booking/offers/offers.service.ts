import { withTransaction } from '@repo/db';
import { AppError } from '@repo/http';
import type { DbTx } from '../../../db/index.js';
import type { Offer, ServiceRequest } from '../../../db/schema/index.js';
import type { Actor } from '../../../lib/context.js';
import { isUniqueViolation } from '../../../lib/db-errors.js';
import { DAY_MS } from '../../../lib/time.js';
import { illegalMove, transition, type TransitionDeps } from '../../../lib/transitions.js';
import type { ActivityRecorder } from '../../activity-log/index.js';
import type { Outbox } from '../../outbox/index.js';
import type { SettingsService } from '../../settings/index.js';
import { insertBooking, refusePendingOffers, requestExpired, type SlotChecker } from '../lifecycle.js';
import {
  findRequest,
  isActivePrestataire,
  LIVE_REQUEST_STATUSES,
  lockRequest,
  serviceRequestMachine,
  visibleTo,
} from '../requests/requests.repository.js';
import * as repo from './offers.repository.js';
import type { OfferBody } from './offers.schemas.js';

const SLOT_MESSAGES = {
  past: 'Must be at least 60 minutes from now',
  off_grid: 'Must start on your local 30-minute grid (:00 or :30)',
  outside_hours: 'Must fall within your opening hours, outside your closures and absences',
  busy: 'You already have an appointment at that time',
} as const;

const subjectOf = (id: number) => ({ type: 'offer', id });

export function createOffersService(deps: {
  db: DbTx;
  recorder: ActivityRecorder;
  outbox: Outbox;
  settings: Pick<SettingsService, 'get'>;
  availability: SlotChecker;
  now?: () => Date;
}) {
  const { db, recorder, outbox, availability } = deps;
  const now = deps.now ?? (() => new Date());
  const moveDeps = (actor: Actor): TransitionDeps => ({ recorder, outbox, actor });

  async function assertActivePrestataire(actor: Actor) {
    if (actor.role !== 'prestataire' || !(await isActivePrestataire(db, actor.userId))) {
      throw new AppError('forbidden', 'Only a validated prestataire may make or change offers');
    }
  }

  /** The proposed start must be a free slot of the prestataire when the offer is made or changed (422). */
  async function assertFreeSlot(tx: DbTx, prestataireId: number, startsAt: Date, durationMinutes: number) {
    const verdict = await availability.checkSlot(prestataireId, startsAt, new Date(startsAt.getTime() + durationMinutes * 60_000), { tx, onGrid: true });
    if (verdict !== 'free') throw AppError.validation({ proposed_start_at: [SLOT_MESSAGES[verdict]] });
  }

  /** An offer stands until the date given, by default the settings' lifetime, never past its request's expiry. */
  async function validUntilFor(tx: DbTx, request: ServiceRequest, given: Date | undefined) {
    if (given) {
      if (given <= now()) throw AppError.validation({ valid_until: ['Must be in the future'] });
      if (given > request.expiresAt) {
        throw AppError.validation({ valid_until: [`Must not be after the request expires (${request.expiresAt.toISOString()})`] });
      }
      return given;
    }
    const { offer_lifetime_days } = await deps.settings.get(tx);
    const byDefault = new Date(now().getTime() + offer_lifetime_days * DAY_MS);
    return byDefault < request.expiresAt ? byDefault : request.expiresAt;
  }

  async function present(tx: DbTx, offer: Offer) {
    const row = await repo.findOfferRow(tx, offer.id);
    return row ?? { offer, businessName: null, ratingAverage: null, ratingCount: 0 };
  }

  /** An offer on a request of the calling client; any other is not found. */
  async function offerOfClient(actor: Actor, offerId: number) {
    const found = await repo.findOfferWithRequest(db, offerId);
    if (!found || found.request.clientId !== actor.userId) throw AppError.notFound('Offer');
    return found;
  }

  return {
    /** A request's offers: all of them for its client and admins, a prestataire's own for a prestataire. */
    async list(actor: Actor, requestId: number) {
      if (actor.role === 'admin') {
        if (!(await findRequest(db, requestId))) throw AppError.notFound('Service request');
        return repo.listOffersOf(db, requestId);
      }
      if (actor.role === 'prestataire') {
        if (!(await findRequest(db, requestId, visibleTo(actor.userId)))) throw AppError.notFound('Service request');
        return repo.listOffersOf(db, requestId, repo.offerOfPrestataire(actor.userId));
      }
      const request = await findRequest(db, requestId);
      if (!request || request.clientId !== actor.userId) throw AppError.notFound('Service request');
      return repo.listOffersOf(db, requestId);
    },

    /**
     * A quote on a request the prestataire can reach: 404 for one it cannot, 409 once the request is
     * no longer open to offers or it already has a pending offer there. The first offer moves the
     * request to `quoted`.
     */
    async create(actor: Actor, requestId: number, body: OfferBody) {
      await assertActivePrestataire(actor);
      // What it cannot open (GET /prestataire/requests/{id} answers 404) is not found here either.
      if (!(await findRequest(db, requestId, visibleTo(actor.userId)))) throw AppError.notFound('Service request');
      return withTransaction(db, async (tx) => {
        const request = (await lockRequest(tx, requestId))!;
        if (!LIVE_REQUEST_STATUSES.includes(request.status as 'open')) {
          throw illegalMove(serviceRequestMachine, 'make an offer on', request.status, LIVE_REQUEST_STATUSES);
        }
        if (request.expiresAt <= now()) throw requestExpired(request);
        if (await repo.findPendingOffer(tx, requestId, actor.userId)) {
          throw new AppError('conflict', 'You already have a pending offer on this request: change it instead');
        }
        const validUntil = await validUntilFor(tx, request, body.valid_until);
        await assertFreeSlot(tx, actor.userId, body.proposed_start_at, body.duration_minutes);
        let offer: Offer;
        try {
          offer = await repo.insertOffer(tx, {
            serviceRequestId: requestId,
            prestataireId: actor.userId,
            amountCents: body.amount_cents,
            proposedStartAt: body.proposed_start_at,
            durationMinutes: body.duration_minutes,
            message: body.message ?? null,
            validUntil,
          });
        } catch (error) {
          if (isUniqueViolation(error)) throw new AppError('conflict', 'You already have a pending offer on this request', { cause: error });
          throw error;
        }
        const facts = repo.offerMachine.audit(offer);
        await recorder.record(actor, 'offer.created', subjectOf(offer.id), { after: facts }, tx);
        await outbox.publish(
          actor,
          { type: 'offer.created', subject: subjectOf(offer.id), payload: { ...facts, client_id: request.clientId, valid_until: validUntil.toISOString() } },
          tx,
        );
        if (request.status === 'open') {
          await transition(tx, moveDeps(actor), serviceRequestMachine, requestId, {
            verb: 'quote',
            from: ['open'],
            to: 'quoted',
            action: 'service_request.quoted',
            details: { offer_id: offer.id },
          });
        }
        return present(tx, offer);
      });
    },

    /** New terms for a pending offer of the caller; the slot is checked again. */
    async update(actor: Actor, offerId: number, body: OfferBody) {
      await assertActivePrestataire(actor);
      const found = await repo.findOfferWithRequest(db, offerId);
      if (!found || found.offer.prestataireId !== actor.userId) throw AppError.notFound('Offer');
      return withTransaction(db, async (tx) => {
        const request = (await lockRequest(tx, found.request.id))!;
        const current = (await repo.findOfferWithRequest(tx, offerId))!.offer;
        if (current.status !== 'pending') throw illegalMove(repo.offerMachine, 'edit', current.status, ['pending']);
        const validUntil = await validUntilFor(tx, request, body.valid_until ?? current.validUntil);
        await assertFreeSlot(tx, actor.userId, body.proposed_start_at, body.duration_minutes);
        const updated = await repo.updatePendingOffer(tx, offerId, {
          amountCents: body.amount_cents,
          proposedStartAt: body.proposed_start_at,
          durationMinutes: body.duration_minutes,
          message: body.message === undefined ? current.message : body.message,
          validUntil,
        });
        if (!updated) throw illegalMove(repo.offerMachine, 'edit', current.status, ['pending']);
        const details = { before: repo.offerMachine.audit(current), after: repo.offerMachine.audit(updated) };
        await recorder.record(actor, 'offer.updated', subjectOf(offerId), details, tx);
        await outbox.publish(actor, { type: 'offer.updated', subject: subjectOf(offerId), payload: { ...details.after, client_id: request.clientId } }, tx);
        return present(tx, updated);
      });
    },

    /**
     * The client takes an offer. In one transaction, under the request's lock (so two accepts of one
     * request run one after the other and the second finds it accepted: 409): the offer is accepted,
     * the request accepted, the other pending offers refused, and the appointment booked — the
     * database's exclusion constraint refusing a slot taken since (409). An offer past its
     * `valid_until` that the timer has not expired yet expires in that same transaction, read under
     * its lock, and the transaction commits the expiry before the 409 of an expired offer answers: no
     * window in which it is accepted late, or answered expired while still pending.
     */
    async accept(actor: Actor, offerId: number) {
      const found = await offerOfClient(actor, offerId);
      const outcome = await withTransaction(db, async (tx) => {
        // Sent together, run in this order: the request first, then the offer, as every accept locks them.
        const [, current] = await Promise.all([lockRequest(tx, found.request.id), repo.lockOffer(tx, offerId)]);
        if (current?.status === 'pending' && current.validUntil <= now()) {
          const { row: expired } = await transition(tx, moveDeps(actor), repo.offerMachine, offerId, {
            verb: 'expire',
            from: ['pending'],
            to: 'expired',
            action: 'offer.expired',
            details: { reason: 'valid_until_passed' },
          });
          return { expired };
        }
        const { row: offer } = await transition(tx, moveDeps(actor), repo.offerMachine, offerId, {
          verb: 'accept',
          from: ['pending'],
          to: 'accepted',
          action: 'offer.accepted',
        });
        const endsAt = new Date(offer.proposedStartAt.getTime() + offer.durationMinutes * 60_000);
        // The request's move and the slot check do not depend on each other: sent together.
        const [{ row: request }, verdict] = await Promise.all([
          transition(tx, moveDeps(actor), serviceRequestMachine, offer.serviceRequestId, {
            verb: 'accept an offer on',
            from: LIVE_REQUEST_STATUSES,
            to: 'accepted',
            action: 'service_request.accepted',
            set: () => ({ acceptedAt: now() }),
            details: { offer_id: offer.id },
          }),
          availability.checkSlot(offer.prestataireId, offer.proposedStartAt, endsAt, { tx }),
        ]);
        if (request.expiresAt <= now()) throw requestExpired(request);
        if (verdict === 'busy') throw new AppError('conflict', 'The prestataire is no longer free at the proposed time');
        if (verdict !== 'free') {
          throw new AppError('conflict', verdict === 'past' ? 'The proposed time is too close or past' : 'The proposed time is no longer within the prestataire’s hours');
        }
        const [, appointment, presented] = await Promise.all([
          refusePendingOffers(tx, moveDeps(actor), request.id, 'another_offer_accepted', offer.id),
          insertBooking(tx, { outbox, actor }, {
            serviceRequestId: request.id,
            offerId: offer.id,
            clientId: request.clientId,
            prestataireId: offer.prestataireId,
            vehicleId: request.vehicleId,
            serviceId: request.serviceId,
            startsAt: offer.proposedStartAt,
            endsAt,
            priceCents: offer.amountCents,
          }),
          present(tx, offer),
        ]);
        return { accepted: { offer: presented, appointment } };
      });
      // The expiry has committed; the answer is the one an expired offer gets.
      if (outcome.expired) throw illegalMove(repo.offerMachine, 'accept', outcome.expired.status, ['pending']);
      return outcome.accepted;
    },

    async refuse(actor: Actor, offerId: number) {
      await offerOfClient(actor, offerId);
      const { row } = await transition(db, moveDeps(actor), repo.offerMachine, offerId, {
        verb: 'refuse',
        from: ['pending'],
        to: 'refused',
        action: 'offer.refused',
        details: { reason: 'refused_by_client' },
      });
      return present(db, row);
    },
  };
}

export type OffersService = ReturnType<typeof createOffersService>;
