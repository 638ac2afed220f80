/** The tariff-grids module's public entry: what the rest of the app may use of it. */
export { tariffGridsRoutes } from './tariff-grids.routes.js';
export { createTariffGridsService, type TariffGridsService } from './tariff-grids.service.js';
