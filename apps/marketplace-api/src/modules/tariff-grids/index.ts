/** The tariff-grids module's public entry: what the rest of the app may use of it. */
import type { ModuleContext } from '../context.js';
import { tariffGridsRoutes } from './tariff-grids.routes.js';
import { createTariffGridsService } from './tariff-grids.service.js';

export { type TariffGridsService } from './tariff-grids.service.js';

/** The prestataires' hourly rates by vehicle class. */
export function tariffGridsModule({ db, recorder }: ModuleContext) {
  const tariffGrids = createTariffGridsService({ db, recorder });
  return { tariffGrids, routes: tariffGridsRoutes({ tariffGrids }) };
}
