/**
 * Vehicle technical data from a repair-data vendor: identification by VIN or plate, the vehicle's
 * profile, the catalogue of repair tasks with their labour times, and repair procedures per system.
 * Two implementations: the vendor's HTTP API (configured by REPAIRDATA_URL) and a dataset bundled
 * with the app, so a fresh checkout works offline.
 */

/** A vehicle as the repair-data source knows it; `id` is the source's own vehicle id. */
export interface RepairVehicle {
  id: string;
  make: string;
  model: string;
  /** Commercial variant, e.g. "1.5 dCi 90". */
  variant: string | null;
  yearFrom: number;
  yearTo: number | null;
  fuel: 'petrol' | 'diesel' | 'hybrid' | 'electric' | 'lpg' | null;
  engineCode: string | null;
  engineCapacityCc: number | null;
  powerKw: number | null;
  /** Tariff category used by labour grids: `city`, `compact`, `family`, `suv`, `premium`, `utility`. */
  category: string;
}

/** The full profile: the vehicle plus its systems (engine, brakes, …) and service data. */
export interface RepairVehicleProfile extends RepairVehicle {
  systems: { code: string; name: string }[];
  serviceIntervals: { description: string; km: number | null; months: number | null }[];
}

export interface RepairTask {
  code: string;
  name: string;
  systemCode: string;
}

/** Labour time for one task on one vehicle, in hours (decimal, e.g. 1.3). */
export interface RepairTime {
  taskCode: string;
  name: string;
  hours: number;
  /** Extra tasks usually done with it, each with its own time. */
  includes: string[];
  notes: string | null;
}

export interface RepairProcedure {
  title: string;
  steps: string[];
  torqueSpecs: { item: string; nm: number }[];
  warnings: string[];
}

export interface IdentifyQuery {
  vin?: string;
  /** Normalised French plate, e.g. `AB-123-CD`. */
  plate?: string;
}

export interface RepairDataProvider {
  readonly kind: 'http' | 'builtin';
  /** The matching vehicle, or null when the source does not know it. */
  identify(query: IdentifyQuery): Promise<RepairVehicle | null>;
  vehicle(vehicleId: string): Promise<RepairVehicleProfile | null>;
  /** Tasks for a vehicle matching free text and/or a system; null when the vehicle is unknown. */
  searchTasks(vehicleId: string, query: { q?: string; systemCode?: string }): Promise<RepairTask[] | null>;
  /** Null when the vehicle or the task is unknown. */
  repairTime(vehicleId: string, taskCode: string): Promise<RepairTime | null>;
  /** Times for several tasks; unknown task codes are listed in `unknown`. Null when the vehicle is unknown. */
  repairTimes(vehicleId: string, taskCodes: string[]): Promise<{ times: RepairTime[]; unknown: string[] } | null>;
  /** Null when the vehicle or the system is unknown. */
  procedures(vehicleId: string, systemCode: string): Promise<RepairProcedure[] | null>;
}

/** The vendor failed (timeout, 5xx, open circuit): answered as 502 in the envelope by the routes. */
export class RepairDataUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'RepairDataUnavailableError';
  }
}
