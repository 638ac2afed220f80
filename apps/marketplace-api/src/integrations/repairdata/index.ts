import type { Config } from '../../config.js';
import type { Db } from '../../db/index.js';
import { createBuiltinRepairData } from './builtin.js';
import { withRepairDataCache } from './cache.js';
import { createHttpRepairData } from './http.js';
import type { RepairDataProvider } from './repairdata.js';

export * from './repairdata.js';

/**
 * The vendor's API behind the database cache when REPAIRDATA_URL is set, otherwise the bundled
 * dataset (no cache: it is already in memory).
 */
export function createRepairData(
  config: Pick<Config, 'repairData'>,
  deps: { db: Db; log?: { warn(obj: object, msg: string): void } },
): RepairDataProvider {
  const { url, cacheTtlHours, ...http } = config.repairData;
  if (!url) return createBuiltinRepairData();
  return withRepairDataCache(createHttpRepairData({ ...http, url, log: deps.log }), {
    db: deps.db,
    ttlHours: cacheTtlHours,
    log: deps.log,
  });
}
