import { withTransaction } from '@repo/db';
import { AppError } from '@repo/http';
import type { DbTx } from '../../db/index.js';
import type { Actor } from '../../lib/context.js';
import { type ActivityRecorder, userSubject } from '../activity-log/index.js';
import { catalogueRecords } from '../catalogue/index.js';
import { lockProfile } from '../prestataire-profile/index.js';
import * as repo from './prestataire-services.repository.js';
import { presentOwnService, type SyncServicesBody } from './prestataire-services.schemas.js';

/** What the activity log keeps of a set of services. */
function audit(list: repo.OwnService[]) {
  return list.map((s) => {
    const { service_id, price_cents, duration_minutes } = presentOwnService(s);
    return { service_id, price_cents, duration_minutes };
  });
}

/** The services a prestataire offers, each with its own price and duration. */
export function createPrestataireServicesService(deps: { db: DbTx; recorder: ActivityRecorder }) {
  const { db, recorder } = deps;

  /** The prestataire's profile row, locked so that concurrent changes of its set apply one after the other. */
  async function lockOwn(tx: DbTx, actor: Actor) {
    if (!(await lockProfile(tx, actor.userId))) throw AppError.notFound('Prestataire profile');
  }

  return {
    list(actor: Actor) {
      return repo.listOwnServices(db, actor.userId);
    },

    /** Replaces the whole set; each price and duration left out takes the catalogue's. */
    async sync(actor: Actor, body: SyncServicesBody) {
      const prestataireId = actor.userId;
      return withTransaction(db, async (tx) => {
        await lockOwn(tx, actor);
        const catalogue = new Map((await repo.findActiveServices(tx, body.services.map((s) => s.service_id))).map((s) => [s.id, s]));
        const errors: Record<string, string[]> = {};
        body.services.forEach((item, index) => {
          if (!catalogue.has(item.service_id)) errors[`services.${index}.service_id`] = ['No active service has this id'];
        });
        if (Object.keys(errors).length > 0) throw AppError.validation(errors);

        const before = await repo.listOwnServices(tx, prestataireId);
        const rows = body.services.map((item) => {
          const defaults = catalogue.get(item.service_id)!;
          return {
            serviceId: item.service_id,
            priceCents: item.price_cents !== undefined ? item.price_cents : defaults.priceCents,
            durationMinutes: item.duration_minutes ?? defaults.durationMinutes,
          };
        });
        await repo.removeServicesExcept(tx, prestataireId, rows.map((r) => r.serviceId));
        await repo.upsertServices(tx, prestataireId, rows);
        const after = await repo.listOwnServices(tx, prestataireId);
        const [was, is] = [audit(before), audit(after)];
        if (JSON.stringify(was) !== JSON.stringify(is)) {
          await recorder.record(actor, 'prestataire.services_updated', userSubject(prestataireId), { before: { services: was }, after: { services: is } }, tx);
        }
        return after;
      });
    },

    /** Adds one service with the catalogue's price and duration; one already offered stays as it is. */
    async enable(actor: Actor, serviceId: number) {
      const prestataireId = actor.userId;
      return withTransaction(db, async (tx) => {
        await lockOwn(tx, actor);
        const found = await catalogueRecords.findActiveService(tx, serviceId);
        if (!found) throw AppError.notFound('Service');
        const created = await repo.addServiceIfAbsent(tx, prestataireId, {
          serviceId,
          priceCents: found.service.priceCents,
          durationMinutes: found.service.durationMinutes,
        });
        const service = (await repo.listOwnServices(tx, prestataireId)).find((s) => s.serviceId === serviceId);
        if (!service) throw AppError.notFound('Service');
        if (created) {
          await recorder.record(actor, 'prestataire.service_enabled', userSubject(prestataireId), { after: audit([service])[0] }, tx);
        }
        return { service, created };
      });
    },
  };
}

export type PrestataireServicesService = ReturnType<typeof createPrestataireServicesService>;
