import { withTransaction } from '@repo/db';
import { AppError, pageMeta, pageOffset, type FieldErrors } from '@repo/http';
import type { DbTx } from '../../../db/index.js';
import type { ServiceRequest, ServiceRequestStatus } from '../../../db/schema/index.js';
import { newStorageKey, type Storage } from '../../../integrations/storage/storage.js';
import type { Actor } from '../../../lib/context.js';
import { DAY_MS } from '../../../lib/time.js';
import { illegalMove, transition, type TransitionDeps } from '../../../lib/transitions.js';
import type { UploadedFile } from '../../../lib/uploads.js';
import type { ActivityRecorder } from '../../activity-log/index.js';
import type { Outbox } from '../../outbox/index.js';
import type { SettingsService } from '../../settings/index.js';
import { listOffersOf } from '../offers/offers.repository.js';
import { insertBooking, refusePendingOffers, requestExpired, type SlotChecker } from '../lifecycle.js';
import * as repo from './requests.repository.js';
import type {
  AcceptRequestBody,
  CreateServiceRequestBody,
  PatchServiceRequestBody,
} from './requests.schemas.js';

/** At most this many photos per request. */
export const MAX_PHOTOS_PER_REQUEST = 10;

export interface ListQuery {
  page: number;
  per_page: number;
  status?: ServiceRequestStatus;
  service_id?: number;
}

const subjectOf = (id: number) => ({ type: 'service_request', id });

export function createServiceRequestsService(deps: {
  db: DbTx;
  recorder: ActivityRecorder;
  outbox: Outbox;
  settings: Pick<SettingsService, 'get'>;
  storage: Storage;
  availability: SlotChecker;
  now?: () => Date;
}) {
  const { db, recorder, outbox, storage, availability } = deps;
  const now = deps.now ?? (() => new Date());
  const moveDeps = (actor: Actor): TransitionDeps => ({ recorder, outbox, actor });

  /**
   * The ids a request body names, checked against the caller: its own live vehicle, an active
   * service, and for a direct request a validated prestataire offering that service. Every failing
   * field is named at once.
   */
  async function checkReferences(
    tx: DbTx,
    actor: Actor,
    refs: { vehicleId: number; serviceId: number; prestataireId: number | null; cityId?: number },
  ) {
    const errors: FieldErrors = {};
    const [vehicle, service, prestataire, city] = await Promise.all([
      repo.findOwnVehicle(tx, actor.userId, refs.vehicleId),
      repo.findActiveService(tx, refs.serviceId),
      refs.prestataireId === null ? undefined : repo.findBookablePrestataire(tx, refs.prestataireId, refs.serviceId),
      refs.cityId === undefined ? undefined : repo.findCity(tx, refs.cityId),
    ]);
    if (!vehicle) errors.vehicle_id = ['Must be one of your vehicles'];
    if (!service) errors.service_id = ['Must be an active service of the catalogue'];
    if (refs.prestataireId !== null && !prestataire) {
      errors.prestataire_id = ['Must be a validated prestataire offering this service'];
    }
    if (refs.cityId !== undefined && !city) errors.city_id = ['Unknown city'];
    if (Object.keys(errors).length > 0) throw AppError.validation(errors);
    return { city };
  }

  /** The client's own request; anyone else's is not found. */
  async function ownRequest(tx: DbTx, actor: Actor, id: number, lock = false) {
    const request = lock ? await repo.lockRequest(tx, id) : await repo.findRequest(tx, id);
    if (!request || request.clientId !== actor.userId) throw AppError.notFound('Service request');
    return request;
  }

  /** Editable and deletable only while open with no offer (DESIGN.md §6); 409 otherwise. */
  async function assertEditable(tx: DbTx, request: ServiceRequest, verb: string) {
    if (request.status !== 'open') throw illegalMove(repo.serviceRequestMachine, verb, request.status, ['open']);
    if ((await repo.countOffers(tx, request.id)) > 0) {
      throw new AppError('conflict', `Cannot ${verb} a service request that has received offers`, {
        extra: { current_status: request.status },
      });
    }
  }

  /** 403 unless the caller is a validated prestataire with an active account. */
  async function assertActivePrestataire(actor: Actor) {
    if (actor.role !== 'prestataire' || !(await repo.isActivePrestataire(db, actor.userId))) {
      throw new AppError('forbidden', 'Only a validated prestataire may do this');
    }
  }

  /** Who may see which requests: its client, the prestataires it reaches, any admin. */
  function scopeOf(actor: Actor) {
    if (actor.role === 'admin') return undefined;
    if (actor.role === 'prestataire') return repo.visibleTo(actor.userId);
    return repo.requestOfClient(actor.userId);
  }

  async function page(scope: ReturnType<typeof scopeOf>, query: ListQuery, prestataireId?: number) {
    const { rows, total } = await repo.listRequests(
      db,
      scope,
      { status: query.status, serviceId: query.service_id },
      query.per_page,
      pageOffset(query.page, query.per_page),
      { prestataireId },
    );
    return { rows, meta: pageMeta(query.page, query.per_page, total) };
  }

  /** The request cancelled by its client or an admin; its pending offers are refused with it. */
  async function cancel(actor: Actor, id: number, reason: string | null, check?: (request: ServiceRequest) => void) {
    return withTransaction(db, async (tx) => {
      if (check) {
        const request = await repo.findRequest(tx, id);
        if (!request) throw AppError.notFound('Service request');
        check(request);
      }
      const { row } = await transition(tx, moveDeps(actor), repo.serviceRequestMachine, id, {
        verb: 'cancel',
        from: repo.LIVE_REQUEST_STATUSES,
        to: 'cancelled',
        action: 'service_request.cancelled',
        set: () => ({ cancelledAt: now(), cancelledBy: actor.userId, cancelReason: reason }),
        details: { by: actor.role },
      });
      await refusePendingOffers(tx, moveDeps(actor), id, 'request_cancelled');
      return row;
    });
  }

  return {
    async create(actor: Actor, body: CreateServiceRequestBody) {
      const prestataireId = body.prestataire_id ?? null;
      const { city } = await checkReferences(db, actor, {
        vehicleId: body.vehicle_id,
        serviceId: body.service_id,
        prestataireId,
        cityId: body.city_id,
      });
      // Coordinates win over a city; a city alone places the request at its centre.
      const latitude = body.latitude ?? city!.latitude;
      const longitude = body.longitude ?? city!.longitude;
      return withTransaction(db, async (tx) => {
        const settings = await deps.settings.get(tx);
        const request = await repo.insertRequest(tx, {
          clientId: actor.userId,
          vehicleId: body.vehicle_id,
          serviceId: body.service_id,
          prestataireId,
          description: body.description,
          latitude,
          longitude,
          cityId: body.city_id ?? null,
          preferredDates: (body.preferred_dates ?? []).map((d) => d.toISOString()),
          status: 'open',
          expiresAt: new Date(now().getTime() + settings.request_lifetime_days * DAY_MS),
        });
        const facts = { status: request.status, service_id: request.serviceId, prestataire_id: request.prestataireId };
        await recorder.record(actor, 'service_request.created', subjectOf(request.id), { after: facts }, tx);
        await outbox.publish(
          actor,
          {
            type: 'service_request.created',
            subject: subjectOf(request.id),
            payload: { ...facts, client_id: request.clientId, latitude, longitude, expires_at: request.expiresAt.toISOString() },
          },
          tx,
        );
        return request;
      });
    },

    /** A client's own requests, a prestataire's visible ones, every request for an admin. */
    async list(actor: Actor, query: ListQuery) {
      return page(scopeOf(actor), { ...query, service_id: undefined });
    },

    async show(actor: Actor, id: number) {
      const request = await repo.findRequest(db, id, scopeOf(actor));
      if (!request) throw AppError.notFound('Service request');
      const [photos, appointment] = await Promise.all([repo.listPhotos(db, [id]), repo.findAppointmentOfRequest(db, id)]);
      return { request, photos, appointmentId: appointment?.id ?? null };
    },

    /** PUT (`full`: the creation's body) or PATCH (the fields given), while open with no offer. */
    async update(actor: Actor, id: number, body: PatchServiceRequestBody) {
      return withTransaction(db, async (tx) => {
        const current = await ownRequest(tx, actor, id, true);
        await assertEditable(tx, current, 'edit');
        const serviceId = body.service_id ?? current.serviceId;
        const prestataireId = body.prestataire_id === undefined ? current.prestataireId : body.prestataire_id;
        const { city } = await checkReferences(tx, actor, {
          vehicleId: body.vehicle_id ?? current.vehicleId,
          serviceId,
          prestataireId,
          cityId: body.city_id,
        });
        const located =
          body.latitude !== undefined && body.longitude !== undefined
            ? { latitude: body.latitude, longitude: body.longitude, cityId: body.city_id ?? null }
            : city
              ? { latitude: city.latitude, longitude: city.longitude, cityId: city.id }
              : {};
        const row = await repo.updateRequest(tx, id, {
          vehicleId: body.vehicle_id,
          serviceId: body.service_id,
          prestataireId: body.prestataire_id === undefined ? undefined : prestataireId,
          description: body.description,
          preferredDates: body.preferred_dates?.map((d) => d.toISOString()),
          ...located,
        });
        await recorder.record(
          actor,
          'service_request.updated',
          subjectOf(id),
          { before: repo.serviceRequestMachine.audit(current), after: repo.serviceRequestMachine.audit(row) },
          tx,
        );
        return row;
      });
    },

    /** Deletes the request (and its photos) while open with no offer: nothing else refers to it yet. */
    async remove(actor: Actor, id: number) {
      const photos = await withTransaction(db, async (tx) => {
        const current = await ownRequest(tx, actor, id, true);
        await assertEditable(tx, current, 'delete');
        const stored = await repo.listPhotos(tx, [id]);
        await repo.deleteRequest(tx, id);
        await recorder.record(actor, 'service_request.deleted', subjectOf(id), { before: repo.serviceRequestMachine.audit(current) }, tx);
        await outbox.publish(actor, { type: 'service_request.deleted', subject: subjectOf(id), payload: { client_id: current.clientId } }, tx);
        return stored;
      });
      await Promise.all(photos.map((p) => storage.remove(p.storageKey).catch(() => undefined)));
    },

    /** Stores the photos, then records them under the request's lock (at most 10 per request). */
    async addPhotos(actor: Actor, id: number, files: UploadedFile[]) {
      const request = await ownRequest(db, actor, id);
      if (!repo.LIVE_REQUEST_STATUSES.includes(request.status as 'open')) {
        throw illegalMove(repo.serviceRequestMachine, 'add photos to', request.status, repo.LIVE_REQUEST_STATUSES);
      }
      const keys = files.map((f) => newStorageKey('public/request-photos', f.extension));
      await Promise.all(files.map((f, i) => storage.put(keys[i]!, f.buffer)));
      try {
        return await withTransaction(db, async (tx) => {
          const locked = await ownRequest(tx, actor, id, true);
          if (!repo.LIVE_REQUEST_STATUSES.includes(locked.status as 'open')) {
            throw illegalMove(repo.serviceRequestMachine, 'add photos to', locked.status, repo.LIVE_REQUEST_STATUSES);
          }
          const existing = await repo.listPhotos(tx, [id]);
          if (existing.length + files.length > MAX_PHOTOS_PER_REQUEST) {
            throw AppError.validation({
              photos: [`At most ${MAX_PHOTOS_PER_REQUEST} photos per request (${existing.length} already attached)`],
            });
          }
          const added = await repo.insertPhotos(tx, id, keys);
          await recorder.record(actor, 'service_request.photos_added', subjectOf(id), { after: { photos_added: added.length } }, tx);
          return added;
        });
      } catch (error) {
        await Promise.all(keys.map((k) => storage.remove(k).catch(() => undefined)));
        throw error;
      }
    },

    // The client's views

    async clientList(actor: Actor, query: ListQuery) {
      return page(repo.requestOfClient(actor.userId), { ...query, service_id: undefined });
    },

    async clientShow(actor: Actor, id: number) {
      const request = await ownRequest(db, actor, id);
      const [offerRows, photos, appointment] = await Promise.all([
        listOffersOf(db, id),
        repo.listPhotos(db, [id]),
        repo.findAppointmentOfRequest(db, id),
      ]);
      return { request, offers: offerRows, photos, appointment: appointment ?? null };
    },

    /** open|quoted → cancelled by its client; pending offers are refused at once (their prestataires learn it). */
    async clientCancel(actor: Actor, id: number, reason: string | null) {
      return cancel(actor, id, reason, (request) => {
        if (request.clientId !== actor.userId) throw AppError.notFound('Service request');
      });
    },

    async adminCancel(actor: Actor, id: number, reason: string) {
      return cancel(actor, id, reason);
    },

    // The prestataire's views

    async prestataireList(actor: Actor, query: ListQuery) {
      await assertActivePrestataire(actor);
      return page(repo.listedFor(actor.userId), query, actor.userId);
    },

    async prestataireShow(actor: Actor, id: number) {
      await assertActivePrestataire(actor);
      const row = await repo.findForPrestataire(db, id, actor.userId);
      if (!row) throw AppError.notFound('Service request');
      const photos = await repo.listPhotos(db, [id]);
      return { ...row, photos };
    },

    /**
     * The targeted prestataire accepts a direct request at a time it chooses: the request becomes
     * `accepted` and its appointment is booked in the same transaction.
     */
    async prestataireAccept(actor: Actor, id: number, body: AcceptRequestBody) {
      await assertActivePrestataire(actor);
      const request = await directRequest(actor, id, 'accept');
      const pricing = await repo.pricingOf(db, actor.userId, request.serviceId);
      const amount = body.amount_cents ?? pricing?.priceCents ?? null;
      if (amount === null) throw AppError.validation({ amount_cents: ['Required: this service has no price to default to'] });
      const duration = body.duration_minutes ?? pricing?.durationMinutes ?? 60;
      const startsAt = body.starts_at;
      const endsAt = new Date(startsAt.getTime() + duration * 60_000);
      return withTransaction(db, async (tx) => {
        const { row } = await transition(tx, moveDeps(actor), repo.serviceRequestMachine, id, {
          verb: 'accept',
          from: repo.LIVE_REQUEST_STATUSES,
          to: 'accepted',
          action: 'service_request.accepted',
          set: () => ({ acceptedAt: now() }),
        });
        if (row.expiresAt <= now()) throw requestExpired(row);
        const verdict = await availability.checkSlot(actor.userId, startsAt, endsAt, { tx });
        if (verdict === 'past') throw AppError.validation({ starts_at: ['Must be at least 60 minutes from now'] });
        if (verdict === 'outside_hours') throw AppError.validation({ starts_at: ['Must fall within your opening hours'] });
        if (verdict === 'busy') throw new AppError('conflict', 'You already have an appointment at that time');
        await refusePendingOffers(tx, moveDeps(actor), id, 'request_accepted');
        const appointment = await insertBooking(tx, { outbox, actor }, {
          serviceRequestId: id,
          offerId: null,
          clientId: row.clientId,
          prestataireId: actor.userId,
          vehicleId: row.vehicleId,
          serviceId: row.serviceId,
          startsAt,
          endsAt,
          priceCents: amount,
          currency: pricing?.currency ?? 'EUR',
        });
        return { request: row, appointment };
      });
    },

    /** The targeted prestataire declines a direct request. */
    async prestataireRefuse(actor: Actor, id: number, reason: string | null) {
      await assertActivePrestataire(actor);
      await directRequest(actor, id, 'refuse');
      return withTransaction(db, async (tx) => {
        const { row } = await transition(tx, moveDeps(actor), repo.serviceRequestMachine, id, {
          verb: 'refuse',
          from: repo.LIVE_REQUEST_STATUSES,
          to: 'refused',
          action: 'service_request.refused',
          set: () => ({ refusalReason: reason }),
        });
        await refusePendingOffers(tx, moveDeps(actor), id, 'request_refused');
        return row;
      });
    },
  };

  /**
   * A request the prestataire may see, which must be aimed at it: one it cannot see is not found;
   * an open request (aimed at no one) can only be answered with an offer (409).
   */
  async function directRequest(actor: Actor, id: number, verb: string) {
    const request = await repo.findRequest(db, id, repo.visibleTo(actor.userId));
    if (!request) throw AppError.notFound('Service request');
    if (request.prestataireId !== actor.userId) {
      throw new AppError('conflict', `Only a direct request can be ${verb === 'accept' ? 'accepted' : 'refused'}; answer this one with an offer`, {
        extra: { current_status: request.status },
      });
    }
    return request;
  }
}

export type ServiceRequestsService = ReturnType<typeof createServiceRequestsService>;
