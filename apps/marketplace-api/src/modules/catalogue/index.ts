/** The catalogue's public entry: categories, services and cities, and the folded text search they share. */
import { findActiveService, findCategory, findCity } from './catalogue.repository.js';

export { pageOfServices } from './catalogue.repository.js';
export { catalogueRoutes } from './catalogue.routes.js';
export { CategoryResponse, CategorySummary, presentCategory, presentService } from './catalogue.schemas.js';
export { createCatalogueService } from './catalogue.service.js';
export { foldedContains } from './text-search.js';

/** Lookups other modules make inside their own transactions. */
export const catalogueRecords = { findActiveService, findCategory, findCity };
