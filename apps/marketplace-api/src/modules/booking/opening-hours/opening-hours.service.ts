import { withTransaction } from '@repo/db';
import { AppError, pageMeta, pageOffset } from '@repo/http';
import type { DbTx } from '../../../db/index.js';
import type { Absence, Closure } from '../../../db/schema/index.js';
import type { Actor } from '../../../lib/context.js';
import { todayIn } from '../../../lib/time.js';
import { type ActivityRecorder, userSubject } from '../../activity-log/index.js';
import { lockProfile } from '../../prestataire-profile/index.js';
import * as repo from './opening-hours.repository.js';
import {
  closureRangeErrors,
  presentAbsence,
  presentAvailability,
  type AbsencesQuery,
  type AvailabilitiesBody,
  type ClosureBody,
  type ClosuresQuery,
  type CreateAbsenceBody,
  type PatchClosureBody,
} from './opening-hours.schemas.js';

function auditAbsence(a: Absence) {
  const { id, starts_at, ends_at, reason } = presentAbsence(a);
  return { absence_id: id, starts_at, ends_at, reason };
}

function auditClosure(c: Closure) {
  return { closure_id: c.id, start_date: c.startDate, end_date: c.endDate, reason: c.reason };
}

/**
 * A prestataire's own calendar: its weekly hours (wall-clock, in its time zone), its absences
 * (instants) and its closures (whole local days). The public reads of availability are elsewhere.
 */
export function createScheduleService(deps: { db: DbTx; recorder: ActivityRecorder; now?: () => Date }) {
  const { db, recorder } = deps;
  const now = deps.now ?? (() => new Date());

  return {
    listAvailabilities(actor: Actor) {
      return repo.listAvailabilities(db, actor.userId);
    },

    /** Replaces the whole week in one transaction, under the profile's lock so that two at once apply in turn. */
    async replaceAvailabilities(actor: Actor, body: AvailabilitiesBody) {
      const prestataireId = actor.userId;
      return withTransaction(db, async (tx) => {
        if (!(await lockProfile(tx, prestataireId))) throw AppError.notFound('Prestataire profile');
        const before = (await repo.listAvailabilities(tx, prestataireId)).map(presentAvailability);
        await repo.replaceAvailabilities(
          tx,
          prestataireId,
          body.availabilities.map((a) => ({ dayOfWeek: a.day_of_week, startTime: a.start_time, endTime: a.end_time })),
        );
        const rows = await repo.listAvailabilities(tx, prestataireId);
        const after = rows.map(presentAvailability);
        const week = (list: typeof after) => list.map(({ day_of_week, start_time, end_time }) => ({ day_of_week, start_time, end_time }));
        if (JSON.stringify(week(before)) !== JSON.stringify(week(after))) {
          await recorder.record(
            actor,
            'prestataire.availabilities_updated',
            userSubject(prestataireId),
            { before: { availabilities: week(before) }, after: { availabilities: week(after) } },
            tx,
          );
        }
        return rows;
      });
    },

    /** Absences overlapping the window; by default those not yet over. */
    async listAbsences(actor: Actor, query: AbsencesQuery) {
      const { rows, total } = await repo.listAbsences(
        db,
        actor.userId,
        { from: query.from ?? now(), to: query.to },
        query.per_page,
        pageOffset(query.page, query.per_page),
      );
      return { rows, meta: pageMeta(query.page, query.per_page, total) };
    },

    async createAbsence(actor: Actor, body: CreateAbsenceBody) {
      return withTransaction(db, async (tx) => {
        const absence = await repo.insertAbsence(tx, {
          prestataireId: actor.userId,
          startsAt: body.starts_at,
          endsAt: body.ends_at,
          reason: body.reason ?? null,
        });
        await recorder.record(actor, 'prestataire.absence_created', userSubject(actor.userId), { after: auditAbsence(absence) }, tx);
        return absence;
      });
    },

    async deleteAbsence(actor: Actor, absenceId: number) {
      await withTransaction(db, async (tx) => {
        const deleted = await repo.deleteOwnAbsence(tx, actor.userId, absenceId);
        if (!deleted) throw AppError.notFound('Absence');
        await recorder.record(actor, 'prestataire.absence_deleted', userSubject(actor.userId), { before: auditAbsence(deleted) }, tx);
      });
    },

    /** Closures overlapping the window; by default those not yet over in the prestataire's time zone. */
    async listClosures(actor: Actor, query: ClosuresQuery) {
      let from = query.from;
      if (from === undefined) {
        const zone = await repo.findTimezone(db, actor.userId);
        if (!zone) throw AppError.notFound('Prestataire profile');
        from = todayIn(zone, now());
      }
      const { rows, total } = await repo.listClosures(
        db,
        actor.userId,
        { from, to: query.to },
        query.per_page,
        pageOffset(query.page, query.per_page),
      );
      return { rows, meta: pageMeta(query.page, query.per_page, total) };
    },

    async getClosure(actor: Actor, closureId: number) {
      const closure = await repo.findOwnClosure(db, actor.userId, closureId);
      if (!closure) throw AppError.notFound('Closure');
      return closure;
    },

    async createClosure(actor: Actor, body: ClosureBody) {
      return withTransaction(db, async (tx) => {
        const closure = await repo.insertClosure(tx, {
          prestataireId: actor.userId,
          startDate: body.start_date,
          endDate: body.end_date,
          reason: body.reason ?? null,
        });
        await recorder.record(actor, 'prestataire.closure_created', userSubject(actor.userId), { after: auditClosure(closure) }, tx);
        return closure;
      });
    },

    /** PUT gives the whole closure (a reason left out is cleared), PATCH some fields; the merged range is checked. */
    async updateClosure(actor: Actor, closureId: number, body: ClosureBody | PatchClosureBody, whole: boolean) {
      return withTransaction(db, async (tx) => {
        const current = await repo.findOwnClosure(tx, actor.userId, closureId, true);
        if (!current) throw AppError.notFound('Closure');
        const startDate = body.start_date ?? current.startDate;
        const endDate = body.end_date ?? current.endDate;
        const reason = body.reason !== undefined ? body.reason : whole ? null : current.reason;
        // Blame the field the request sent: a PATCH of start_date alone is what made the range wrong.
        const blame = body.end_date === undefined && body.start_date !== undefined ? 'start_date' : 'end_date';
        const errors = closureRangeErrors(startDate, endDate, blame);
        if (Object.keys(errors).length > 0) throw AppError.validation(errors);
        if (startDate === current.startDate && endDate === current.endDate && reason === current.reason) return current;
        const updated = await repo.updateOwnClosure(tx, actor.userId, closureId, { startDate, endDate, reason });
        if (!updated) throw AppError.notFound('Closure');
        await recorder.record(
          actor,
          'prestataire.closure_updated',
          userSubject(actor.userId),
          { before: auditClosure(current), after: auditClosure(updated) },
          tx,
        );
        return updated;
      });
    },

    async deleteClosure(actor: Actor, closureId: number) {
      await withTransaction(db, async (tx) => {
        const deleted = await repo.deleteOwnClosure(tx, actor.userId, closureId);
        if (!deleted) throw AppError.notFound('Closure');
        await recorder.record(actor, 'prestataire.closure_deleted', userSubject(actor.userId), { before: auditClosure(deleted) }, tx);
      });
    },
  };
}

export type ScheduleService = ReturnType<typeof createScheduleService>;
