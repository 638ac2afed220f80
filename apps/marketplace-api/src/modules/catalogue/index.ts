/** The catalogue's public entry: categories, services and cities, and the folded text search they share. */
import type { ModuleContext, Mounted } from '../context.js';
import { findActiveService, findCategory, findCity } from './catalogue.repository.js';
import { catalogueRoutes } from './catalogue.routes.js';
import { createCatalogueService } from './catalogue.service.js';

export { pageOfServices } from './catalogue.repository.js';
export { CategoryResponse, CategorySummary, presentCategory, presentService } from './catalogue.schemas.js';
export { foldedContains } from './text-search.js';

/** Lookups other modules make inside their own transactions. */
export const catalogueRecords = { findActiveService, findCategory, findCity };

/** The public catalogue: categories, services, cities. */
export function catalogueModule({ db }: ModuleContext): Mounted {
  return { routes: catalogueRoutes({ catalogue: createCatalogueService({ db }) }) };
}
