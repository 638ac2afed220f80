import { withTransaction } from '@repo/db';
import { AppError, pageMeta, pageOffset } from '@repo/http';
import type { DbTx } from '../../db/index.js';
import type { Service } from '../../db/schema/index.js';
import type { Actor } from '../../lib/context.js';
import { isUniqueViolation } from '../../lib/db-errors.js';
import type { ActivityRecorder } from '../activity-log/index.js';
import * as repo from './admin-services.repository.js';
import { slugify, type AdminServicesQuery, type ReorderBody, type ServiceBody, type ServicePatch } from './admin-services.schemas.js';
import { catalogueRecords } from '../catalogue/index.js';

function slugConflict(): AppError {
  return new AppError('conflict', 'Another service already has this slug', { errors: { slug: ['Already taken by another service'] } });
}

/** Runs a write, answering the unique index's refusal of a duplicate slug (a concurrent twin) as a 409. */
async function guarded<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (isUniqueViolation(error)) throw slugConflict();
    throw error;
  }
}

/** What the activity log keeps of a service. */
function audit(s: Service): Record<string, unknown> {
  return {
    category_id: s.categoryId,
    slug: s.slug,
    name: s.name,
    description: s.description,
    duration_minutes: s.durationMinutes,
    price_cents: s.priceCents,
    position: s.position,
    active: s.active,
  };
}

/** The fields that differ between two states, each side (the log's before/after). */
function changes(before: Service, after: Service) {
  const b = audit(before);
  const a = audit(after);
  const keys = Object.keys(a).filter((k) => a[k] !== b[k]);
  return { before: Object.fromEntries(keys.map((k) => [k, b[k]])), after: Object.fromEntries(keys.map((k) => [k, a[k]])) };
}

/** The administrators' catalogue: services of every state, their order, and their categories. */
export function createAdminServicesService(deps: { db: DbTx; recorder: ActivityRecorder }) {
  const { db, recorder } = deps;

  async function requireCategory(tx: DbTx, categoryId: number) {
    if (!(await catalogueRecords.findCategory(tx, categoryId))) throw AppError.validation({ category_id: ['No such category'] });
  }

  async function withCategory(tx: DbTx, serviceId: number) {
    const found = await repo.findService(tx, serviceId);
    if (!found) throw AppError.notFound('Service');
    return found;
  }

  /** The slug to store: the one given, or one made from the name; 409 when another service holds it. */
  async function freeSlug(tx: DbTx, given: string | undefined, name: string, exceptId?: number): Promise<string> {
    const slug = given ?? slugify(name);
    if (slug === '') throw AppError.validation({ slug: ['Give a slug: the name has no letters or digits to make one from'] });
    if (await repo.slugTaken(tx, slug, exceptId)) throw slugConflict();
    return slug;
  }

  async function write(actor: Actor, serviceId: number, patch: ServicePatch, whole: boolean) {
    return guarded(() =>
      withTransaction(db, async (tx) => {
        const before = await repo.lockService(tx, serviceId);
        if (!before) throw AppError.notFound('Service');
        const values: Partial<Service> = {};
        if (patch.category_id !== undefined && patch.category_id !== before.categoryId) {
          await requireCategory(tx, patch.category_id);
          values.categoryId = patch.category_id;
          // A service moved to another category goes last there.
          values.position = await repo.nextPosition(tx, patch.category_id);
        }
        if (patch.name !== undefined) values.name = patch.name;
        if (patch.slug !== undefined && patch.slug !== before.slug) values.slug = await freeSlug(tx, patch.slug, before.name, serviceId);
        if (patch.duration_minutes !== undefined) values.durationMinutes = patch.duration_minutes;
        if (whole) {
          // A PUT states the whole service: optional fields left out go back to their defaults.
          values.description = patch.description ?? null;
          values.priceCents = patch.price_cents ?? null;
          values.active = patch.active ?? true;
        } else {
          if (patch.description !== undefined) values.description = patch.description;
          if (patch.price_cents !== undefined) values.priceCents = patch.price_cents;
          if (patch.active !== undefined) values.active = patch.active;
        }
        const after = await repo.updateService(tx, serviceId, values);
        if (!after) throw AppError.notFound('Service');
        const diff = changes(before, after);
        if (Object.keys(diff.after).length > 0) {
          await recorder.record(actor, 'service.updated', { type: 'service', id: serviceId }, diff, tx);
        }
        return withCategory(tx, serviceId);
      }),
    );
  }

  return {
    async list(query: AdminServicesQuery) {
      const { rows, total } = await repo.listServices(
        db,
        { categoryId: query.category_id, active: query.active, q: query.q },
        query.per_page,
        pageOffset(query.page, query.per_page),
      );
      return { rows, meta: pageMeta(query.page, query.per_page, total) };
    },

    get: (serviceId: number) => withCategory(db, serviceId),

    async create(actor: Actor, body: ServiceBody) {
      return guarded(() =>
        withTransaction(db, async (tx) => {
          await requireCategory(tx, body.category_id);
          const service = await repo.insertService(tx, {
            categoryId: body.category_id,
            slug: await freeSlug(tx, body.slug, body.name),
            name: body.name,
            description: body.description ?? null,
            durationMinutes: body.duration_minutes,
            priceCents: body.price_cents ?? null,
            active: body.active ?? true,
            position: await repo.nextPosition(tx, body.category_id),
          });
          await recorder.record(actor, 'service.created', { type: 'service', id: service.id }, { after: audit(service) }, tx);
          return withCategory(tx, service.id);
        }),
      );
    },

    replace: (actor: Actor, serviceId: number, body: ServiceBody) => write(actor, serviceId, body, true),
    update: (actor: Actor, serviceId: number, body: ServicePatch) => write(actor, serviceId, body, false),

    /**
     * Deletes an unused service. One that prestataires offer or that requests or appointments name
     * is deactivated instead (its history must keep pointing at it): `deactivated` says which.
     */
    async remove(actor: Actor, serviceId: number) {
      return withTransaction(db, async (tx) => {
        const before = await repo.lockService(tx, serviceId);
        if (!before) throw AppError.notFound('Service');
        if (await repo.serviceInUse(tx, serviceId)) {
          const after = before.active ? await repo.updateService(tx, serviceId, { active: false }) : before;
          if (before.active) {
            await recorder.record(actor, 'service.deactivated', { type: 'service', id: serviceId }, changes(before, after!), tx);
          }
          return { deactivated: await withCategory(tx, serviceId) };
        }
        await repo.deleteService(tx, serviceId);
        await recorder.record(actor, 'service.deleted', { type: 'service', id: serviceId }, { before: audit(before) }, tx);
        return { deactivated: undefined };
      });
    },

    /** Sets the positions given, all or none; an unknown id answers 422 naming its entry. */
    async reorder(actor: Actor, body: ReorderBody) {
      const ids = body.services.map((s) => s.id);
      return withTransaction(db, async (tx) => {
        const found = new Map((await repo.lockServices(tx, ids)).map((s) => [s.id, s]));
        const errors: Record<string, string[]> = {};
        body.services.forEach((s, index) => {
          if (!found.has(s.id)) errors[`services.${index}.id`] = ['No such service'];
        });
        if (Object.keys(errors).length > 0) throw AppError.validation(errors);
        const before: Record<string, number> = {};
        const after: Record<string, number> = {};
        for (const { id, position } of body.services) {
          const current = found.get(id)!;
          if (current.position === position) continue;
          before[id] = current.position;
          after[id] = position;
          await repo.setPosition(tx, id, position);
        }
        if (Object.keys(after).length > 0) {
          await recorder.record(actor, 'service.reordered', { type: 'service', id: null }, { before: { positions: before }, after: { positions: after } }, tx);
        }
        return repo.findServicesWithCategory(tx, ids);
      });
    },

    listCategories: () => repo.listCategoriesWithCounts(db),
  };
}

export type AdminServicesService = ReturnType<typeof createAdminServicesService>;
