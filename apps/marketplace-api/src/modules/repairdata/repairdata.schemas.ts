import { z } from 'zod';
import type { RepairProcedure, RepairTask, RepairTime, RepairVehicleProfile } from '../../integrations/repairdata/repairdata.js';
import { presentRepairVehicle, RepairVehicleResponse } from '../vehicles/index.js';

/** Ids and codes of the repair-data source: opaque, but kept to characters safe in a URL path. */
const sourceCode = (what: string) =>
  z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, `Must be a ${what} of 1 to 64 letters, digits, "_" or "-"`);

export const VehicleIdParams = z.object({ vehicleId: sourceCode('vehicle id') });
export const TaskParams = VehicleIdParams.extend({ taskCode: sourceCode('task code') });
export const SystemParams = VehicleIdParams.extend({ systemCode: sourceCode('system code') });

export const TasksQuery = z.object({
  q: z
    .string()
    .trim()
    .max(100)
    .optional()
    .transform((q) => q || undefined)
    .describe('Free text matched against task names (every word must match; accents and case ignored)'),
  system: sourceCode('system code').optional().describe('Only the tasks of this system, e.g. `brakes`'),
});

export const BatchTimesBody = z.object({
  task_codes: z
    .array(sourceCode('task code'))
    .min(1, 'Give at least one task code')
    .max(50, 'Give at most 50 task codes')
    .refine((codes) => new Set(codes).size === codes.length, 'Task codes must be unique'),
});

export const RepairVehicleProfileResponse = RepairVehicleResponse.extend({
  systems: z.array(z.object({ code: z.string(), name: z.string() })),
  service_intervals: z.array(
    z.object({ description: z.string(), km: z.number().int().nullable(), months: z.number().int().nullable() }),
  ),
});

export const RepairTaskResponse = z.object({ code: z.string(), name: z.string(), system_code: z.string() });

export const RepairTimeResponse = z.object({
  task_code: z.string(),
  name: z.string(),
  hours: z.number().describe('Labour time in decimal hours'),
  includes: z.array(z.string()).describe('Task codes usually done at the same time, each with its own time'),
  notes: z.string().nullable(),
});

export const BatchTimesResponse = z.object({
  times: z.array(RepairTimeResponse),
  unknown: z.array(z.string()).describe('Requested task codes the vehicle has no time for'),
});

export const RepairProcedureResponse = z.object({
  title: z.string(),
  steps: z.array(z.string()),
  torque_specs: z.array(z.object({ item: z.string(), nm: z.number() })),
  warnings: z.array(z.string()),
});

export function presentProfile(v: RepairVehicleProfile): z.infer<typeof RepairVehicleProfileResponse> {
  return {
    ...presentRepairVehicle(v),
    systems: v.systems.map((s) => ({ code: s.code, name: s.name })),
    service_intervals: v.serviceIntervals.map((i) => ({ description: i.description, km: i.km, months: i.months })),
  };
}

export function presentTask(t: RepairTask): z.infer<typeof RepairTaskResponse> {
  return { code: t.code, name: t.name, system_code: t.systemCode };
}

export function presentTime(t: RepairTime): z.infer<typeof RepairTimeResponse> {
  return { task_code: t.taskCode, name: t.name, hours: t.hours, includes: t.includes, notes: t.notes };
}

export function presentProcedure(p: RepairProcedure): z.infer<typeof RepairProcedureResponse> {
  return {
    title: p.title,
    steps: p.steps,
    torque_specs: p.torqueSpecs.map((s) => ({ item: s.item, nm: s.nm })),
    warnings: p.warnings,
  };
}
