import { z } from 'zod';
import {
  RepairDataUnavailableError,
  type IdentifyQuery,
  type RepairDataProvider,
  type RepairProcedure,
  type RepairTask,
  type RepairTime,
  type RepairVehicle,
  type RepairVehicleProfile,
} from './repairdata.js';

/**
 * The repair-data vendor's HTTP API. Every request carries `Authorization: Bearer <key>` when a
 * key is configured and answers JSON in snake_case; 404 means "unknown vehicle, task or system".
 *
 *   GET  /vehicles/identify?vin=VF1…           → Vehicle                (or ?plate=AB-123-CD)
 *   GET  /vehicles/{id}                        → Vehicle & { systems: [{ code, name }],
 *                                                  service_intervals: [{ description, km, months }] }
 *   GET  /vehicles/{id}/tasks?q=&system=       → { tasks: [{ code, name, system_code }] }
 *   GET  /vehicles/{id}/tasks/{code}/times     → Time
 *   POST /vehicles/{id}/tasks/times { codes }  → { times: Time[], unknown: string[] }
 *   GET  /vehicles/{id}/systems/{code}/procedures
 *                                              → { procedures: [{ title, steps: string[],
 *                                                  torque_specs: [{ item, nm }], warnings: string[] }] }
 *
 *   Vehicle = { id, make, model, variant, year_from, year_to, fuel, engine_code,
 *               engine_capacity_cc, power_kw, category }
 *   Time    = { task_code, name, hours, includes: string[], notes }
 *
 * Network errors, timeouts and 5xx are retried with exponential backoff and jitter; other 4xx
 * are not (the request itself is wrong). A consecutive run of failed attempts opens a circuit
 * breaker that fails calls fast, then lets one trial call through once it has cooled down. An
 * answer that is not what the shape above promises is the vendor's failure, never a crash here.
 */

const FUELS = ['petrol', 'diesel', 'hybrid', 'electric', 'lpg'] as const;

const VendorVehicle = z.object({
  id: z.string().min(1),
  make: z.string(),
  model: z.string(),
  variant: z.string().nullable().default(null),
  year_from: z.number().int(),
  year_to: z.number().int().nullable().default(null),
  // A fuel this API has no word for (CNG, hydrogen…) is kept as unknown rather than refused.
  fuel: z.enum(FUELS).nullable().catch(null),
  engine_code: z.string().nullable().default(null),
  engine_capacity_cc: z.number().int().nullable().default(null),
  power_kw: z.number().nullable().default(null),
  category: z.string(),
});

const VendorProfile = VendorVehicle.extend({
  systems: z.array(z.object({ code: z.string(), name: z.string() })),
  service_intervals: z.array(
    z.object({ description: z.string(), km: z.number().int().nullable().default(null), months: z.number().int().nullable().default(null) }),
  ),
});

const VendorTime = z.object({
  task_code: z.string(),
  name: z.string(),
  hours: z.number().nonnegative(),
  includes: z.array(z.string()).default([]),
  notes: z.string().nullable().default(null),
});

const VendorTasks = z.object({ tasks: z.array(z.object({ code: z.string(), name: z.string(), system_code: z.string() })) });
const VendorTimes = z.object({ times: z.array(VendorTime), unknown: z.array(z.string()).default([]) });
const VendorProcedures = z.object({
  procedures: z.array(
    z.object({
      title: z.string(),
      steps: z.array(z.string()),
      torque_specs: z.array(z.object({ item: z.string(), nm: z.number() })).default([]),
      warnings: z.array(z.string()).default([]),
    }),
  ),
});

const toVehicle = (v: z.infer<typeof VendorVehicle>): RepairVehicle => ({
  id: v.id,
  make: v.make,
  model: v.model,
  variant: v.variant,
  yearFrom: v.year_from,
  yearTo: v.year_to,
  fuel: v.fuel,
  engineCode: v.engine_code,
  engineCapacityCc: v.engine_capacity_cc,
  powerKw: v.power_kw,
  category: v.category,
});

const toTime = (t: z.infer<typeof VendorTime>): RepairTime => ({
  taskCode: t.task_code,
  name: t.name,
  hours: t.hours,
  includes: t.includes,
  notes: t.notes,
});

export interface CircuitBreakerOptions {
  /** Consecutive failed attempts that open the circuit. */
  failureThreshold: number;
  openMs: number;
  now?: () => number;
}

/**
 * closed → (threshold failures) → open → (openMs later) → half-open: one trial attempt at a time;
 * its success closes the circuit, its failure opens it again.
 */
export function createCircuitBreaker(options: CircuitBreakerOptions) {
  const now = options.now ?? Date.now;
  let failures = 0;
  let openUntil = 0;
  let trialInFlight = false;
  let state: 'closed' | 'open' | 'half_open' = 'closed';

  return {
    get state() {
      return state;
    },
    /** Throws when no attempt may be made now. */
    admit() {
      if (state === 'closed') return;
      if (state === 'open' && now() >= openUntil) state = 'half_open';
      if (state === 'half_open' && !trialInFlight) {
        trialInFlight = true;
        return;
      }
      throw new RepairDataUnavailableError('The repair-data vendor is failing; calls are suspended for a while');
    },
    success() {
      failures = 0;
      trialInFlight = false;
      state = 'closed';
    },
    failure() {
      failures += 1;
      if (state === 'half_open' || failures >= options.failureThreshold) {
        state = 'open';
        openUntil = now() + options.openMs;
        trialInFlight = false;
      }
    },
  };
}

export interface HttpRepairDataOptions {
  url: string;
  apiKey?: string;
  timeoutMs: number;
  maxAttempts: number;
  retryBaseMs: number;
  circuitFailures: number;
  circuitOpenSeconds: number;
  log?: { warn(obj: object, msg: string): void };
  now?: () => number;
}

/** A failed attempt worth another try (network, timeout, 5xx). */
class TransientError extends Error {}

export function createHttpRepairData(options: HttpRepairDataOptions): RepairDataProvider {
  const base = options.url.replace(/\/+$/, '');
  const breaker = createCircuitBreaker({
    failureThreshold: options.circuitFailures,
    openMs: options.circuitOpenSeconds * 1000,
    now: options.now,
  });
  const headers: Record<string, string> = { accept: 'application/json' };
  if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`;
  const seg = encodeURIComponent;

  /** One attempt: the parsed body, null on 404; throws TransientError or RepairDataUnavailableError. */
  async function attempt<T>(method: 'GET' | 'POST', path: string, body: unknown, schema: z.ZodType<T>): Promise<T | null> {
    let response: Response;
    let text: string;
    try {
      response = await fetch(`${base}${path}`, {
        method,
        headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(options.timeoutMs),
      });
      text = await response.text();
    } catch (error) {
      breaker.failure();
      throw new TransientError((error as Error).message, { cause: error });
    }
    if (response.status >= 500) {
      breaker.failure();
      throw new TransientError(`HTTP ${response.status}`);
    }
    // The vendor is up and answering; a refusal is about this request, not its health.
    if (response.status === 404) {
      breaker.success();
      return null;
    }
    if (!response.ok) {
      breaker.success();
      throw new RepairDataUnavailableError(`The repair-data vendor refused the request (HTTP ${response.status})`);
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (error) {
      breaker.failure();
      throw new RepairDataUnavailableError('The repair-data vendor answered malformed JSON', { cause: error });
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success) {
      breaker.failure();
      throw new RepairDataUnavailableError('The repair-data vendor answered an unexpected shape', { cause: parsed.error });
    }
    breaker.success();
    return parsed.data;
  }

  async function call<T>(method: 'GET' | 'POST', path: string, body: unknown, schema: z.ZodType<T>): Promise<T | null> {
    for (let n = 1; ; n++) {
      breaker.admit();
      try {
        return await attempt(method, path, body, schema);
      } catch (error) {
        if (!(error instanceof TransientError)) {
          options.log?.warn({ err: error, path }, 'repair-data vendor call failed');
          throw error;
        }
        if (n >= options.maxAttempts) {
          options.log?.warn({ err: error, path, attempts: n }, 'repair-data vendor unavailable');
          throw new RepairDataUnavailableError('The repair-data vendor did not answer', { cause: error });
        }
        const delay = options.retryBaseMs * 2 ** (n - 1);
        await new Promise((resolve) => setTimeout(resolve, delay + Math.random() * delay));
      }
    }
  }

  return {
    kind: 'http',

    async identify(query: IdentifyQuery) {
      const params = query.vin ? new URLSearchParams({ vin: query.vin }) : query.plate ? new URLSearchParams({ plate: query.plate }) : null;
      if (!params) return null;
      const v = await call('GET', `/vehicles/identify?${params}`, undefined, VendorVehicle);
      return v && toVehicle(v);
    },

    async vehicle(vehicleId): Promise<RepairVehicleProfile | null> {
      const v = await call('GET', `/vehicles/${seg(vehicleId)}`, undefined, VendorProfile);
      return v && { ...toVehicle(v), systems: v.systems, serviceIntervals: v.service_intervals };
    },

    async searchTasks(vehicleId, query): Promise<RepairTask[] | null> {
      const params = new URLSearchParams();
      if (query.q) params.set('q', query.q);
      if (query.systemCode) params.set('system', query.systemCode);
      const qs = params.size > 0 ? `?${params}` : '';
      const r = await call('GET', `/vehicles/${seg(vehicleId)}/tasks${qs}`, undefined, VendorTasks);
      return r && r.tasks.map((t) => ({ code: t.code, name: t.name, systemCode: t.system_code }));
    },

    async repairTime(vehicleId, taskCode) {
      const t = await call('GET', `/vehicles/${seg(vehicleId)}/tasks/${seg(taskCode)}/times`, undefined, VendorTime);
      return t && toTime(t);
    },

    async repairTimes(vehicleId, taskCodes) {
      const r = await call('POST', `/vehicles/${seg(vehicleId)}/tasks/times`, { codes: [...new Set(taskCodes)] }, VendorTimes);
      return r && { times: r.times.map(toTime), unknown: r.unknown };
    },

    async procedures(vehicleId, systemCode): Promise<RepairProcedure[] | null> {
      const r = await call('GET', `/vehicles/${seg(vehicleId)}/systems/${seg(systemCode)}/procedures`, undefined, VendorProcedures);
      return (
        r &&
        r.procedures.map((p) => ({ title: p.title, steps: p.steps, torqueSpecs: p.torque_specs, warnings: p.warnings }))
      );
    },
  };
}
