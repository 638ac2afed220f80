import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { foldAccents } from '../../lib/text.js';
import { normalisePlate, normaliseVin, vinModelYears, vinWmi } from '../../lib/vin.js';
import type {
  IdentifyQuery,
  RepairDataProvider,
  RepairProcedure,
  RepairTask,
  RepairTime,
  RepairVehicle,
  RepairVehicleProfile,
} from './repairdata.js';

/**
 * The repair-data source bundled with the app (`data/repairdata/*.json`): a few dozen common
 * European vehicles, a task catalogue, labour times and procedures. Times are derived from the
 * catalogue's base time × the vehicle's labour factor, unless the vehicle gives its own; a task
 * exists for a vehicle only when it applies to it (no oil change on an electric car).
 */

// Same depth from src/ and dist/, so the data folder is found from both.
const DATA_DIR = new URL('../../../data/repairdata/', import.meta.url);

const FUELS = ['petrol', 'diesel', 'hybrid', 'electric', 'lpg'] as const;
type Fuel = (typeof FUELS)[number];
export const CATEGORIES = ['city', 'compact', 'family', 'suv', 'premium', 'utility'] as const;

const code = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/);
const feature = z.string().regex(/^[a-z0-9_]+$/);
const condition = {
  fuels: z.array(z.enum(FUELS)).optional(),
  requires: z.array(feature).default([]),
  excludes: z.array(feature).default([]),
};
type Condition = { fuels?: Fuel[]; requires: string[]; excludes: string[] };

const TasksFile = z.object({
  systems: z.array(z.object({ code, name: z.string().min(1) })),
  tasks: z.array(
    z.object({
      code,
      name: z.string().min(1),
      system: code,
      hours: z.number().positive(),
      ...condition,
      includes: z.array(z.object({ task: code, when: feature.optional() })).default([]),
      notes: z.string().optional(),
      notes_when: z.record(feature, z.string()).default({}),
    }),
  ),
});

const SERVICE_ITEMS = {
  oil: 'Engine oil and filter',
  timing_belt: 'Timing belt kit',
  spark_plugs: 'Spark plugs',
  fuel_filter: 'Diesel fuel filter',
  air_filter: 'Engine air filter',
  cabin_filter: 'Cabin filter',
  coolant: 'Coolant',
  automatic_transmission: 'Automatic transmission fluid',
  hv_battery_check: 'High-voltage battery health check',
  ac_desiccant: 'A/C desiccant bag',
  tyre_rotation: 'Tyre rotation',
} as const;
type ServiceItem = keyof typeof SERVICE_ITEMS;
const interval = z.tuple([z.number().int().positive().nullable(), z.number().int().positive().nullable()]);

const VehiclesFile = z.object({
  makes: z.record(
    z.string(),
    z.object({
      wmi: z.array(z.string().regex(/^[A-HJ-NPR-Z0-9]{3}$/)),
      torque: z.string(),
      oil: z.string().nullable(),
      brake_fluid_months: z.number().int().positive(),
    }),
  ),
  torque: z.record(z.string(), z.record(z.string(), z.number().positive())),
  vehicles: z.array(
    z.object({
      id: code,
      make: z.string(),
      model: z.string().min(1),
      variant: z.string().nullable(),
      years: z.tuple([z.number().int(), z.number().int().nullable()]),
      fuel: z.enum(FUELS),
      engine: z.tuple([z.string().nullable(), z.number().int().positive().nullable(), z.number().positive().nullable()]),
      category: z.enum(CATEGORIES),
      vin: z.array(z.string()),
      features: z.array(feature),
      factor: z.number().positive(),
      times: z.record(code, z.number().positive()).default({}),
      notes: z.record(code, z.string()).default({}),
      oil: z.string().optional(),
      service: z.partialRecord(z.enum(Object.keys(SERVICE_ITEMS) as [ServiceItem, ...ServiceItem[]]), interval),
    }),
  ),
  demo_plates: z.record(z.string(), code),
});

const ProceduresFile = z.object({
  torque_labels: z.record(z.string(), z.string()),
  systems: z.record(
    code,
    z.array(
      z.object({
        title: z.string().min(1),
        ...condition,
        steps: z.array(z.string().min(1)).min(1),
        torque: z.array(z.string()),
        warnings: z.array(z.string()),
        warnings_when: z.record(feature, z.array(z.string())).default({}),
      }),
    ),
  ),
});

type TasksData = z.infer<typeof TasksFile>;
type VehiclesData = z.infer<typeof VehiclesFile>;
type ProceduresData = z.infer<typeof ProceduresFile>;

interface Entry {
  vehicle: RepairVehicle;
  profile: RepairVehicleProfile;
  tasks: (RepairTask & { time: RepairTime; search: string })[];
  procedures: Map<string, RepairProcedure[]>;
  vinPatterns: RegExp[];
}

interface Dataset {
  entries: Entry[];
  byId: Map<string, Entry>;
  byWmi: Map<string, Entry[]>;
  plates: Map<string, Entry>;
}

/** Lower case without accents, so "megane" finds "Mégane" and "freins" finds nothing by accident. */
function fold(text: string): string {
  return foldAccents(text).toLowerCase();
}

const round1 = (hours: number) => Math.round(hours * 10) / 10;

function readJson(name: string): unknown {
  return JSON.parse(readFileSync(new URL(name, DATA_DIR), 'utf8'));
}

function parse<T>(schema: z.ZodType<T>, name: string): T {
  const result = schema.safeParse(readJson(name));
  if (!result.success) throw new Error(`data/repairdata/${name} is invalid: ${z.prettifyError(result.error)}`);
  return result.data;
}

/** Checks the task catalogue and the procedures against each other; answers the task codes. */
function checkTasks(tasksData: TasksData, proceduresData: ProceduresData, problems: string[]): Set<string> {
  const systemNames = new Map(tasksData.systems.map((s) => [s.code, s.name]));
  const taskCodes = new Set(tasksData.tasks.map((t) => t.code));
  if (taskCodes.size !== tasksData.tasks.length) problems.push('duplicate task codes');
  for (const task of tasksData.tasks) {
    if (!systemNames.has(task.system)) problems.push(`task ${task.code}: unknown system ${task.system}`);
    for (const include of task.includes) {
      if (!taskCodes.has(include.task)) problems.push(`task ${task.code}: includes unknown task ${include.task}`);
    }
  }
  for (const system of Object.keys(proceduresData.systems)) {
    if (!systemNames.has(system)) problems.push(`procedures: unknown system ${system}`);
  }
  return taskCodes;
}

/** A vehicle's maintenance schedule: the defaults of its fuel and features, then its own. */
function serviceIntervalsOf(v: VehiclesData['vehicles'][number], features: Set<string>, brakeFluidMonths: number) {
  const intervals: Partial<Record<ServiceItem, [number | null, number | null]>> = {
    ...(v.fuel !== 'electric' ? { oil: [20000, 12], air_filter: [60000, 48], coolant: [160000, 60] } : {}),
    ...(['petrol', 'hybrid', 'lpg'].includes(v.fuel) ? { spark_plugs: [60000, 72] } : {}),
    ...(v.fuel === 'diesel' ? { fuel_filter: [60000, 48] } : {}),
    ...(features.has('high_voltage') ? { hv_battery_check: [null, 12] } : {}),
    cabin_filter: [30000, 24],
    ...v.service,
  };
  const serviceIntervals: RepairVehicleProfile['serviceIntervals'] = (Object.keys(SERVICE_ITEMS) as ServiceItem[])
    .filter((item) => intervals[item])
    .map((item) => ({ description: SERVICE_ITEMS[item], km: intervals[item]![0], months: intervals[item]![1] }));
  serviceIntervals.push({ description: 'Brake fluid', km: null, months: brakeFluidMonths });
  return serviceIntervals;
}

/** Resolves the three files into per-vehicle tables; any inconsistency between them is a bug in the data. */
function buildDataset(tasksData: TasksData, vehiclesData: VehiclesData, proceduresData: ProceduresData): Dataset {
  const problems: string[] = [];
  const taskCodes = checkTasks(tasksData, proceduresData, problems);

  const entries: Entry[] = [];
  for (const v of vehiclesData.vehicles) {
    const make = vehiclesData.makes[v.make];
    const torque = make ? vehiclesData.torque[make.torque] : undefined;
    if (!make || !torque) {
      problems.push(`vehicle ${v.id}: unknown make ${v.make} or its torque table`);
      continue;
    }
    for (const key of [...Object.keys(v.times), ...Object.keys(v.notes)]) {
      if (!taskCodes.has(key)) problems.push(`vehicle ${v.id}: unknown task ${key}`);
    }
    if (v.features.includes('timing_belt') && !v.service.timing_belt) problems.push(`vehicle ${v.id}: timing belt without interval`);

    const features = new Set<string>([...v.features, v.fuel]);
    if (v.fuel === 'electric' || v.fuel === 'hybrid') features.add('high_voltage');
    const applies = (c: Condition) =>
      (!c.fuels || c.fuels.includes(v.fuel)) && c.requires.every((f) => features.has(f)) && !c.excludes.some((f) => features.has(f));

    const applicable = tasksData.tasks.filter(applies);
    const applicableCodes = new Set(applicable.map((t) => t.code));
    for (const key of Object.keys(v.times)) {
      if (taskCodes.has(key) && !applicableCodes.has(key)) problems.push(`vehicle ${v.id}: time for a task that does not apply (${key})`);
    }
    const tasks = applicable.map((t) => {
      const notes = [t.notes, ...Object.entries(t.notes_when).filter(([f]) => features.has(f)).map(([, n]) => n), v.notes[t.code]]
        .filter((n): n is string => Boolean(n))
        .join(' ');
      const time: RepairTime = {
        taskCode: t.code,
        name: t.name,
        hours: v.times[t.code] ?? round1(t.hours * v.factor),
        includes: t.includes
          .filter((i) => (!i.when || features.has(i.when)) && applicableCodes.has(i.task))
          .map((i) => i.task),
        notes: notes || null,
      };
      return { code: t.code, name: t.name, systemCode: t.system, time, search: fold(`${t.name} ${t.code.replace(/_/g, ' ')}`) };
    });

    const systems = tasksData.systems.filter((s) => tasks.some((t) => t.systemCode === s.code));
    const oilSpec = v.oil ?? make.oil ?? '';
    const procedures = new Map<string, RepairProcedure[]>();
    for (const system of systems) {
      procedures.set(
        system.code,
        (proceduresData.systems[system.code] ?? []).filter(applies).map((p) => ({
          title: p.title,
          steps: p.steps.map((s) => s.replaceAll('{oil}', oilSpec)),
          torqueSpecs: p.torque
            .filter((key) => torque[key] !== undefined)
            .map((key) => ({ item: proceduresData.torque_labels[key] ?? key, nm: torque[key]! })),
          warnings: [...p.warnings, ...Object.entries(p.warnings_when).filter(([f]) => features.has(f)).flatMap(([, w]) => w)],
        })),
      );
    }

    const serviceIntervals = serviceIntervalsOf(v, features, make.brake_fluid_months);

    const vehicle: RepairVehicle = {
      id: v.id,
      make: v.make,
      model: v.model,
      variant: v.variant,
      yearFrom: v.years[0],
      yearTo: v.years[1],
      fuel: v.fuel,
      engineCode: v.engine[0],
      engineCapacityCc: v.engine[1],
      powerKw: v.engine[2],
      category: v.category,
    };
    let vinPatterns: RegExp[] = [];
    try {
      vinPatterns = v.vin.map((p) => new RegExp(p));
    } catch (error) {
      problems.push(`vehicle ${v.id}: ${(error as Error).message}`);
    }
    entries.push({ vehicle, profile: { ...vehicle, systems, serviceIntervals }, tasks, procedures, vinPatterns });
  }

  const byId = new Map(entries.map((e) => [e.vehicle.id, e]));
  if (byId.size !== entries.length) problems.push('duplicate vehicle ids');
  const byWmi = new Map<string, Entry[]>();
  for (const [makeName, make] of Object.entries(vehiclesData.makes)) {
    const ofMake = entries.filter((e) => e.vehicle.make === makeName);
    for (const wmi of make.wmi) byWmi.set(wmi, ofMake);
  }
  const plates = new Map<string, Entry>();
  for (const [plate, id] of Object.entries(vehiclesData.demo_plates)) {
    const entry = byId.get(id);
    if (!entry || normalisePlate(plate) !== plate) problems.push(`demo plate ${plate}: not canonical or unknown vehicle ${id}`);
    else plates.set(plate, entry);
  }
  if (problems.length > 0) throw new Error(`The bundled repair data is inconsistent:\n  ${problems.join('\n  ')}`);
  return { entries, byId, byWmi, plates };
}

let dataset: Dataset | undefined;

/** Read once per process; every app instance shares it, and nothing ever mutates it. */
function loadDataset(): Dataset {
  dataset ??= buildDataset(
    parse(TasksFile, 'tasks.json'),
    parse(VehiclesFile, 'vehicles.json'),
    parse(ProceduresFile, 'procedures.json'),
  );
  return dataset;
}

const fits = (v: RepairVehicle, year: number) => v.yearFrom <= year && (v.yearTo === null || year <= v.yearTo);

/**
 * The manufacturer (WMI) and model year (position 10) pick the make's vehicles built that year; a
 * model hint in the rest of the VIN (e.g. VW's model code at positions 7–8, PSA's engine type at
 * 6–8) picks among them, the longest match first. Without a hint, the make's most common vehicle
 * of that year answers, which is the dataset's order.
 */
function identifyByVin(data: Dataset, input: string): Entry | null {
  const vin = normaliseVin(input);
  if (!/^[A-HJ-NPR-Z0-9]{17}$/.test(vin)) return null;
  const candidates = data.byWmi.get(vinWmi(vin));
  if (!candidates) return null;
  for (const year of vinModelYears(vin)) {
    let best: Entry | null = null;
    let bestLength = 0;
    for (const entry of candidates) {
      if (!fits(entry.vehicle, year)) continue;
      for (const pattern of entry.vinPatterns) {
        const length = pattern.exec(vin)?.[0].length ?? 0;
        if (length > bestLength) {
          best = entry;
          bestLength = length;
        }
      }
    }
    if (best) return best;
  }
  for (const year of vinModelYears(vin)) {
    const entry = candidates.find((e) => fits(e.vehicle, year));
    if (entry) return entry;
  }
  return null;
}

/** The vehicles of the bundled dataset, in its order. */
export function builtinVehicles(): RepairVehicle[] {
  return loadDataset().entries.map((e) => structuredClone(e.vehicle));
}

/** The bundled source. Answers are copies: callers may change them freely. */
export function createBuiltinRepairData(): RepairDataProvider {
  const data = loadDataset();
  const entry = (vehicleId: string) => data.byId.get(vehicleId);

  return {
    kind: 'builtin',

    async identify(query: IdentifyQuery) {
      let found: Entry | null | undefined = null;
      if (query.vin) found = identifyByVin(data, query.vin);
      else if (query.plate) found = data.plates.get(normalisePlate(query.plate) ?? query.plate);
      return found ? structuredClone(found.vehicle) : null;
    },

    async vehicle(vehicleId) {
      const e = entry(vehicleId);
      return e ? structuredClone(e.profile) : null;
    },

    async searchTasks(vehicleId, query) {
      const e = entry(vehicleId);
      if (!e) return null;
      const words = fold(query.q ?? '').split(/\s+/).filter(Boolean);
      return e.tasks
        .filter((t) => !query.systemCode || t.systemCode === query.systemCode)
        .filter((t) => words.every((w) => t.search.includes(w)))
        .map((t) => ({ code: t.code, name: t.name, systemCode: t.systemCode }));
    },

    async repairTime(vehicleId, taskCode) {
      const task = entry(vehicleId)?.tasks.find((t) => t.code === taskCode);
      return task ? structuredClone(task.time) : null;
    },

    async repairTimes(vehicleId, taskCodes) {
      const e = entry(vehicleId);
      if (!e) return null;
      const times: RepairTime[] = [];
      const unknown: string[] = [];
      for (const taskCode of new Set(taskCodes)) {
        const task = e.tasks.find((t) => t.code === taskCode);
        if (task) times.push(structuredClone(task.time));
        else unknown.push(taskCode);
      }
      return { times, unknown };
    },

    async procedures(vehicleId, systemCode) {
      const procedures = entry(vehicleId)?.procedures.get(systemCode);
      return procedures ? structuredClone(procedures) : null;
    },
  };
}
