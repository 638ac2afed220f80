import { withTransaction } from '@repo/db';
import type { DbTx } from '../../../db/index.js';
import { systemActor } from '../../../lib/context.js';
import type { ActivityRecorder } from '../../activity-log/index.js';
import type { DomainEventInput, Outbox } from '../../outbox/index.js';
import type { SettingsService } from '../../settings/index.js';
import * as repo from './timers.repository.js';

export const TIMERS = ['request-expiry', 'offer-expiry', 'auto-complete'] as const;
export type TimerName = (typeof TIMERS)[number];

/** What one pass of the timers moved, by id. */
export interface TimersResult {
  request_expiry?: { service_requests: number[]; offers: number[] };
  offer_expiry?: { offers: number[] };
  auto_complete?: { appointments: number[]; service_requests: number[] };
}

interface Moved {
  subjectType: string;
  id: number;
  action: string;
  from: string;
  to: string;
  extra?: Record<string, unknown>;
}

/**
 * The lifecycle's clocks (DESIGN.md §6): requests and offers expire, ended and paid appointments
 * complete on their own. Each pass works in batches, one transaction each: the due rows are claimed
 * (SKIP LOCKED) and moved by a conditional update, and every moved row gets its activity-log entry
 * (the system as actor) and its outbox event in that transaction. Two instances running at once
 * move each row once; a second pass finds nothing left to move.
 */
export function createLifecycleTimersService(deps: {
  db: DbTx;
  recorder: ActivityRecorder;
  outbox: Outbox;
  settings: Pick<SettingsService, 'get'>;
  batchSize?: number;
}) {
  const batchSize = deps.batchSize ?? 500;

  async function record(tx: DbTx, moved: Moved[]) {
    for (const m of moved) {
      await deps.recorder.record(
        systemActor,
        m.action,
        { type: m.subjectType, id: m.id },
        { before: { status: m.from }, after: { status: m.to, ...m.extra } },
        tx,
      );
    }
    const events: DomainEventInput[] = moved.map((m) => ({
      type: m.action,
      subject: { type: m.subjectType, id: m.id },
      payload: { from: m.from, to: m.to, ...m.extra },
    }));
    await deps.outbox.publish(systemActor, events, tx);
  }

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
      const due = await repo.claimExpiredRequests(tx, batchSize);
      const expired = await repo.expireRequests(
        tx,
        due.map((r) => r.id),
      );
      const before = new Map(due.map((r) => [r.id, r.status]));
      const offers = await repo.expireOffersOfRequests(
        tx,
        expired.map((r) => r.id),
      );
      await record(tx, [
        ...expired.map((r) => ({ subjectType: 'service_request', id: r.id, action: 'service_request.expired', from: before.get(r.id) ?? 'open', to: 'expired' })),
        ...offers.map((o) => ({
          subjectType: 'offer',
          id: o.id,
          action: 'offer.expired',
          from: 'pending',
          to: 'expired',
          extra: { service_request_id: o.serviceRequestId, reason: 'request_expired' },
        })),
      ]);
      result.service_requests.push(...expired.map((r) => r.id));
      result.offers.push(...offers.map((o) => o.id));
      return due.length;
    });
    return result;
  }

  async function offerExpiry() {
    const result = { offers: [] as number[] };
    await inBatches(async (tx) => {
      const due = await repo.claimExpiredOffers(tx, batchSize);
      // A request left without a pending offer stays `quoted`: the client may still get new offers until it expires.
      const expired = await repo.expireOffers(
        tx,
        due.map((o) => o.id),
      );
      await record(
        tx,
        expired.map((o) => ({
          subjectType: 'offer',
          id: o.id,
          action: 'offer.expired',
          from: 'pending',
          to: 'expired',
          extra: { service_request_id: o.serviceRequestId, reason: 'valid_until_passed' },
        })),
      );
      result.offers.push(...expired.map((o) => o.id));
      return due.length;
    });
    return result;
  }

  async function autoComplete() {
    const result = { appointments: [] as number[], service_requests: [] as number[] };
    const { auto_complete_days: days } = await deps.settings.get();
    await inBatches(async (tx) => {
      const due = await repo.claimCompletableAppointments(tx, days, batchSize);
      const completed = await repo.completeAppointments(
        tx,
        due.map((a) => a.id),
      );
      const requests = await repo.completeRequests(
        tx,
        completed.map((a) => a.serviceRequestId),
      );
      await record(tx, [
        ...completed.map((a) => ({
          subjectType: 'appointment',
          id: a.id,
          action: 'appointment.completed',
          from: 'ended',
          to: 'completed',
          extra: { automatic: true, auto_complete_days: days, price_cents: a.priceCents },
        })),
        ...requests.map((r) => ({ subjectType: 'service_request', id: r.id, action: 'service_request.completed', from: 'accepted', to: 'completed' })),
      ]);
      result.appointments.push(...completed.map((a) => a.id));
      result.service_requests.push(...requests.map((r) => r.id));
      return due.length;
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
