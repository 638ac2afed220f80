import { withTransaction } from '@repo/db';
import type { DbTx } from '../../../db/index.js';
import { systemActor } from '../../../lib/context.js';
import { transitionMany, type TransitionDeps } from '../../../lib/transitions.js';
import type { ActivityRecorder } from '../../activity-log/index.js';
import type { Outbox } from '../../outbox/index.js';
import type { SettingsService } from '../../settings/index.js';
import { appointmentMachine } from '../appointments/appointments.repository.js';
import { offerMachine } from '../offers/offers.repository.js';
import { LIVE_REQUEST_STATUSES, serviceRequestMachine } from '../requests/requests.repository.js';
import * as repo from './timers.repository.js';

export const TIMERS = ['request-expiry', 'offer-expiry', 'auto-complete'] as const;
export type TimerName = (typeof TIMERS)[number];

/** What one pass of the timers moved, by id. */
export interface TimersResult {
  request_expiry?: { service_requests: number[]; offers: number[] };
  offer_expiry?: { offers: number[] };
  auto_complete?: { appointments: number[]; service_requests: number[] };
}

/**
 * The lifecycle's clocks (DESIGN.md §6): requests and offers expire, ended and paid appointments
 * complete on their own. Each pass works in batches, one transaction each: the due rows are moved
 * by `transitionMany` (one conditional update; one activity-log entry, the system as actor, and one
 * outbox event per moved row, each kind in one insert). Two instances running at once move each
 * row once; a second pass finds nothing left to move.
 */
export function createLifecycleTimersService(deps: {
  db: DbTx;
  recorder: ActivityRecorder;
  outbox: Outbox;
  settings: Pick<SettingsService, 'get'>;
  batchSize?: number;
}) {
  const batchSize = deps.batchSize ?? 500;
  const moveDeps: TransitionDeps = { recorder: deps.recorder, outbox: deps.outbox, actor: systemActor };
  const ids = (moved: { row: { id: number } }[]) => moved.map((m) => m.row.id);

  /** Runs `batch` until a batch claims fewer rows than the batch size. */
  async function inBatches(batch: (tx: DbTx) => Promise<number>) {
    for (;;) {
      const claimed = await withTransaction(deps.db, batch);
      if (claimed < batchSize) return;
    }
  }

  async function requestExpiry() {
    const result = { service_requests: [] as number[], offers: [] as number[] };
    await inBatches(async (tx) => {
      const expired = await transitionMany(tx, moveDeps, serviceRequestMachine, repo.dueRequests(batchSize), {
        from: LIVE_REQUEST_STATUSES,
        to: 'expired',
        action: 'service_request.expired',
      });
      // Their pending offers expire with them.
      const offers = await transitionMany(tx, moveDeps, offerMachine, repo.offersOfRequests(ids(expired)), {
        from: ['pending'],
        to: 'expired',
        action: 'offer.expired',
        details: { reason: 'request_expired' },
      });
      result.service_requests.push(...ids(expired));
      result.offers.push(...ids(offers));
      return expired.length;
    });
    return result;
  }

  async function offerExpiry() {
    const result = { offers: [] as number[] };
    await inBatches(async (tx) => {
      // A request left without a pending offer stays `quoted`: the client may still get new offers until it expires.
      const expired = await transitionMany(tx, moveDeps, offerMachine, repo.dueOffers(batchSize), {
        from: ['pending'],
        to: 'expired',
        action: 'offer.expired',
        details: { reason: 'valid_until_passed' },
      });
      result.offers.push(...ids(expired));
      return expired.length;
    });
    return result;
  }

  async function autoComplete() {
    const result = { appointments: [] as number[], service_requests: [] as number[] };
    const { auto_complete_days: days } = await deps.settings.get();
    await inBatches(async (tx) => {
      const completed = await transitionMany(tx, moveDeps, appointmentMachine, repo.completableAppointments(days, batchSize), {
        from: ['ended'],
        to: 'completed',
        action: 'appointment.completed',
        set: () => ({ completedAt: new Date() }),
        details: { automatic: true, auto_complete_days: days },
      });
      const requests = await transitionMany(
        tx,
        moveDeps,
        serviceRequestMachine,
        completed.map((a) => a.row.serviceRequestId),
        { from: ['accepted'], to: 'completed', action: 'service_request.completed' },
      );
      result.appointments.push(...ids(completed));
      result.service_requests.push(...ids(requests));
      return completed.length;
    });
    return result;
  }

  return {
    requestExpiry,
    offerExpiry,
    autoComplete,

    /** The named timers (all when none is named), one after the other. */
    async run(names: readonly TimerName[] = TIMERS): Promise<TimersResult> {
      const result: TimersResult = {};
      if (names.includes('request-expiry')) result.request_expiry = await requestExpiry();
      if (names.includes('offer-expiry')) result.offer_expiry = await offerExpiry();
      if (names.includes('auto-complete')) result.auto_complete = await autoComplete();
      return result;
    },
  };
}

export type LifecycleTimersService = ReturnType<typeof createLifecycleTimersService>;
