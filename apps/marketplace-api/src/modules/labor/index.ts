/** The labor module's public entry: what the rest of the app may use of it. */
import type { RepairDataProvider } from '../../integrations/repairdata/index.js';
import type { AiService } from '../ai/index.js';
import type { ModuleContext, Mounted } from '../context.js';
import type { TariffGridsService } from '../tariff-grids/index.js';
import { laborRoutes } from './labor.routes.js';
import { createLaborService } from './labor.service.js';

/** Labour estimates: repair times priced by a prestataire's tariff grid. */
export function laborModule({ db }: ModuleContext, more: { repairData: RepairDataProvider; tariffGrids: TariffGridsService; ai: AiService }): Mounted {
  return { routes: laborRoutes({ labor: createLaborService({ db, ...more }) }) };
}
