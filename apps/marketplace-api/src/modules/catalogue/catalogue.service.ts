import { AppError, pageMeta, pageOffset } from '@repo/http';
import type { DbTx } from '../../db/index.js';
import * as repo from './catalogue.repository.js';
import type { ListCitiesQuery, ListServicesQuery } from './catalogue.schemas.js';

export function createCatalogueService(deps: { db: DbTx }) {
  const { db } = deps;
  return {
    listCategories: () => repo.listCategories(db),

    async listServices(query: ListServicesQuery) {
      const { rows, total } = await repo.listServices(
        db,
        { categoryId: query.category_id, q: query.q },
        query.per_page,
        pageOffset(query.page, query.per_page),
      );
      return { rows, meta: pageMeta(query.page, query.per_page, total) };
    },

    async getService(serviceId: number) {
      const found = await repo.findActiveService(db, serviceId);
      if (!found) throw AppError.notFound('Service');
      return found;
    },

    async listCities(query: ListCitiesQuery) {
      const { rows, total } = await repo.listCities(
        db,
        { q: query.q, postalCode: query.postal_code },
        query.per_page,
        pageOffset(query.page, query.per_page),
      );
      return { rows, meta: pageMeta(query.page, query.per_page, total) };
    },
  };
}

export type CatalogueService = ReturnType<typeof createCatalogueService>;
