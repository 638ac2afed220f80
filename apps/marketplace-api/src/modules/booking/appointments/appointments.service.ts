import { withTransaction } from '@repo/db';
import { AppError, pageMeta, pageOffset } from '@repo/http';
import type { DbTx } from '../../../db/index.js';
import type { Appointment, AppointmentStatus, appointments } from '../../../db/schema/index.js';
import type { Actor } from '../../../lib/context.js';
import { isExclusionViolation } from '../../../lib/db-errors.js';
import { todayIn } from '../../../lib/time.js';
import { illegalMove, transition, type Move } from '../../../lib/transitions.js';
import type { ActivityRecorder } from '../../activity-log/index.js';
import type { Outbox } from '../../outbox/index.js';
import type { SettingsService } from '../../settings/index.js';
import type { AvailabilityService } from '../slots/slots.service.js';
import { serviceRequestMachine } from '../requests/requests.repository.js';
import * as repo from './appointments.repository.js';
import type { ListAppointmentsQuery, PriceAdjustmentBody } from './appointments.schemas.js';

type AppointmentMove = Move<typeof appointments, AppointmentStatus>;
type Party = 'client' | 'prestataire';
type LockedAppointment = Appointment & { timezone: string | null };

const DEFAULT_TIME_ZONE = 'Europe/Paris';
const HOUR_MS = 3_600_000;

/** The party the actor is in an appointment, if any. */
function partyOf(a: Pick<Appointment, 'clientId' | 'prestataireId'>, userId: number): Party | null {
  return a.clientId === userId ? 'client' : a.prestataireId === userId ? 'prestataire' : null;
}

/** A move's 409 for a state it does not leave from, before any further rule is looked at. */
function requireState(a: Appointment, verb: string, from: readonly AppointmentStatus[]) {
  if (!from.includes(a.status)) throw illegalMove(repo.appointmentMachine, verb, a.status, from);
}

/** A 409 on a rule beyond the state (the start day, the payment): the answer still names the state. */
function refused(a: Appointment, message: string) {
  return new AppError('conflict', message, { extra: { current_status: a.status } });
}

/**
 * Appointments (DESIGN.md §6): their two parties read them (an administrator too), and move them
 * through `transition`, so every move is locked, conditional, logged and published in one
 * transaction. Someone who is no party answers 404; a party whose role may not take the move, 403.
 */
export function createAppointmentsService(deps: {
  db: DbTx;
  recorder: ActivityRecorder;
  outbox: Outbox;
  settings: Pick<SettingsService, 'get'>;
  availability: Pick<AvailabilityService, 'checkSlot'>;
  now?: () => Date;
}) {
  const { db } = deps;
  const now = deps.now ?? (() => new Date());

  /** The caller's part in an appointment: 404 to strangers, 403 to an administrator or a party whose role may not act. */
  function authorize(actor: Actor, a: Appointment, allowed: readonly Party[]): Party {
    const party = partyOf(a, actor.userId);
    if (party === null) {
      // An administrator may see every appointment, so the refusal reveals nothing: it is the role.
      if (actor.role === 'admin') throw new AppError('forbidden', 'Administrators act on appointments through /admin/appointments');
      throw AppError.notFound('Appointment');
    }
    if (!allowed.includes(party)) throw new AppError('forbidden', `Only the appointment's ${allowed.join(' or ')} may do this`);
    return party;
  }

  async function view(tx: DbTx, id: number) {
    const found = await repo.findAppointment(tx, id);
    if (!found) throw AppError.notFound('Appointment');
    return found;
  }

  /**
   * One move: the row locked, the caller checked against it, the move built from it (and from the
   * checks only the locked row can answer), then applied; answers the appointment as its parties see it.
   */
  async function move(
    actor: Actor,
    id: number,
    who: readonly Party[] | 'admin',
    build: (a: LockedAppointment, tx: DbTx) => AppointmentMove | Promise<AppointmentMove>,
  ) {
    return withTransaction(db, async (tx) => {
      const a = await repo.lockAppointment(tx, id);
      if (!a) throw AppError.notFound('Appointment');
      if (who !== 'admin') authorize(actor, a, who);
      const m = await build(a, tx);
      requireState(a, m.verb, m.from);
      await transition(tx, { recorder: deps.recorder, outbox: deps.outbox, actor }, repo.appointmentMachine, id, m);
      return view(tx, id);
    });
  }

  async function cancel(actor: Actor, id: number, reason: string, who: readonly Party[] | 'admin') {
    const settings = await deps.settings.get();
    return move(actor, id, who, (a) => {
      requireState(a, 'cancel', ['scheduled']);
      const at = now();
      // Only the client pays for cancelling late: a prestataire's or the platform's cancellation costs it nothing.
      const late = partyOf(a, actor.userId) === 'client' && a.startsAt.getTime() - at.getTime() < settings.cancellation_window_hours * HOUR_MS;
      const fee = late ? Math.floor((a.priceCents * settings.late_cancellation_fee_percent) / 100) : 0;
      return {
        verb: 'cancel',
        from: ['scheduled'],
        to: 'cancelled',
        action: 'appointment.cancelled',
        set: () => ({ cancelledAt: at, cancelledBy: actor.userId, cancelReason: reason, cancellationFeeCents: fee }),
        details: { reason, late, cancellation_fee_cents: fee },
      };
    });
  }

  return {
    /** The caller's appointments (as client or as prestataire), the latest start first. */
    async list(actor: Actor, query: ListAppointmentsQuery) {
      if (actor.role !== 'client' && actor.role !== 'prestataire') {
        throw new AppError('forbidden', 'Only clients and prestataires have appointments');
      }
      const { rows, total } = await repo.listAppointments(
        db,
        { party: { role: actor.role, userId: actor.userId }, status: query.status, from: query.from, to: query.to },
        query.per_page,
        pageOffset(query.page, query.per_page),
      );
      return { rows, meta: pageMeta(query.page, query.per_page, total) };
    },

    /** One appointment, for its parties and administrators; 404 to anyone else. */
    async show(actor: Actor, id: number) {
      const found = await repo.findAppointment(db, id);
      if (!found || (actor.role !== 'admin' && partyOf(found.appointment, actor.userId) === null)) throw AppError.notFound('Appointment');
      return found;
    },

    /**
     * Moves a scheduled appointment to another start, keeping its duration, to a time the
     * prestataire is free: outside its hours (or less than an hour ahead) answers 422 on
     * `starts_at`; over another active appointment, 409 — whether the check or the database's
     * exclusion constraint (a concurrent booking) finds it.
     */
    async reschedule(actor: Actor, id: number, startsAt: Date) {
      try {
        return await move(actor, id, ['client', 'prestataire'], async (a, tx) => {
          requireState(a, 'reschedule', ['scheduled']);
          const endsAt = new Date(startsAt.getTime() + (a.endsAt.getTime() - a.startsAt.getTime()));
          const verdict = await deps.availability.checkSlot(a.prestataireId, startsAt, endsAt, { ignoreAppointmentId: a.id, tx });
          if (verdict === 'past') throw AppError.validation({ starts_at: ['Must be at least 60 minutes from now'] });
          if (verdict === 'outside_hours') throw AppError.validation({ starts_at: ["Must be within the prestataire's free hours"] });
          if (verdict === 'busy') throw new AppError('conflict', 'The prestataire has another appointment at that time');
          return {
            verb: 'reschedule',
            from: ['scheduled'],
            to: 'scheduled',
            action: 'appointment.rescheduled',
            set: () => ({ startsAt, endsAt }),
            details: { previous_starts_at: a.startsAt.toISOString(), previous_ends_at: a.endsAt.toISOString() },
          };
        });
      } catch (error) {
        if (isExclusionViolation(error)) throw new AppError('conflict', 'The prestataire has another appointment at that time');
        throw error;
      }
    },

    /** Cancels a scheduled appointment as one of its parties (a reason is required; a client cancelling late owes the fee). */
    cancel: (actor: Actor, id: number, reason: string) => cancel(actor, id, reason, ['client', 'prestataire']),

    /** Cancels any scheduled appointment as an administrator (never a fee). */
    adminCancel: (actor: Actor, id: number, reason: string) => cancel(actor, id, reason, 'admin'),

    /** The prestataire starts the work, on the appointment's calendar day in its own time zone. */
    start: (actor: Actor, id: number) =>
      move(actor, id, ['prestataire'], (a) => {
        requireState(a, 'start', ['scheduled']);
        const zone = a.timezone ?? DEFAULT_TIME_ZONE;
        const day = todayIn(zone, a.startsAt);
        if (todayIn(zone, now()) !== day) throw refused(a, `The appointment can only be started on its day, ${day} (${zone})`);
        return { verb: 'start', from: ['scheduled'], to: 'in_progress', action: 'appointment.started', set: () => ({ startedAt: now() }) };
      }),

    /**
     * The prestataire ends the work and the price becomes final: an adjustment the client has not
     * accepted by then is rejected (no extra cost without the client's yes).
     */
    end: (actor: Actor, id: number) =>
      move(actor, id, ['prestataire'], (a) => {
        const pending = a.priceAdjustmentStatus === 'pending';
        return {
          verb: 'end',
          from: ['in_progress'],
          to: 'ended',
          action: 'appointment.ended',
          set: () => ({ endedAt: now(), ...(pending ? { priceAdjustmentStatus: 'rejected' as const } : {}) }),
          details: pending ? { price_adjustment_rejected: true } : undefined,
        };
      }),

    /** The client confirms the work once it has paid; the request it came from completes with it. */
    complete: (actor: Actor, id: number) =>
      move(actor, id, ['client'], async (a, tx) => {
        requireState(a, 'complete', ['ended']);
        if (!a.paidAt) throw refused(a, 'The appointment is not paid yet');
        await transition(tx, { recorder: deps.recorder, outbox: deps.outbox, actor }, serviceRequestMachine, a.serviceRequestId, {
          verb: 'complete',
          from: ['accepted'],
          to: 'completed',
          action: 'service_request.completed',
          details: { appointment_id: a.id },
        });
        return { verb: 'complete', from: ['ended'], to: 'completed', action: 'appointment.completed', set: () => ({ completedAt: now() }) };
      }),

    /** The prestataire asks for a new price; it stays pending until the client answers. */
    requestPriceAdjustment: (actor: Actor, id: number, body: PriceAdjustmentBody) =>
      move(actor, id, ['prestataire'], (a) => {
        const from = ['scheduled', 'in_progress'] as const;
        requireState(a, 'request a price adjustment on', from);
        if (a.priceAdjustmentStatus === 'pending') throw refused(a, 'A price adjustment is already waiting for the client');
        return {
          verb: 'request a price adjustment on',
          from: [a.status],
          to: a.status,
          action: 'appointment.price_adjustment_requested',
          set: () => ({
            priceAdjustmentAmountCents: body.amount_cents,
            priceAdjustmentReason: body.reason,
            priceAdjustmentStatus: 'pending' as const,
            priceAdjustmentRequestedAt: now(),
          }),
          details: { reason: body.reason },
        };
      }),

    /** The client accepts the pending adjustment: its amount becomes the price. */
    acceptPriceAdjustment: (actor: Actor, id: number) =>
      move(actor, id, ['client'], (a) => answerAdjustment(a, 'accept', 'accepted')),

    /** The client rejects the pending adjustment: the price stays. */
    rejectPriceAdjustment: (actor: Actor, id: number) =>
      move(actor, id, ['client'], (a) => answerAdjustment(a, 'reject', 'rejected')),
  };
}

/** The client's answer to a pending price adjustment; 409 (with the appointment's status) when none is pending. */
function answerAdjustment(a: Appointment, verb: 'accept' | 'reject', answer: 'accepted' | 'rejected'): AppointmentMove {
  const from = ['scheduled', 'in_progress'] as const;
  requireState(a, `${verb} a price adjustment on`, from);
  if (a.priceAdjustmentStatus !== 'pending' || a.priceAdjustmentAmountCents === null) {
    throw refused(a, 'There is no pending price adjustment');
  }
  const amount = a.priceAdjustmentAmountCents;
  return {
    verb: `${verb} a price adjustment on`,
    from: [a.status],
    to: a.status,
    action: `appointment.price_adjustment_${answer}`,
    set: () => ({ priceAdjustmentStatus: answer, ...(answer === 'accepted' ? { priceCents: amount } : {}) }),
    details: { amount_cents: amount, previous_price_cents: a.priceCents },
  };
}

export type AppointmentsService = ReturnType<typeof createAppointmentsService>;
