import { iso, storableText, UNSTORABLE_TEXT_MESSAGE, timestamp } from '@repo/schemas';
import { z } from 'zod';
import { FUELS, type Vehicle } from '../../db/schema/index.js';
import type { RepairVehicle } from '../../integrations/repairdata/repairdata.js';
import { normalisePlate, normaliseVin, vinProblem } from '../../lib/vin.js';

const text = (max: number) => z.string().trim().min(1).max(max).refine(storableText, UNSTORABLE_TEXT_MESSAGE);

/** A VIN, upper-cased with spaces removed, checked against ISO 3779 (and the check digit for North America). */
export const vinField = z
  .string()
  .max(40)
  .transform(normaliseVin)
  .superRefine((vin, ctx) => {
    const problem = vinProblem(vin);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });

/** A French plate in either format, answered in its canonical spelling. */
export const plateField = z
  .string()
  .max(20)
  .transform((value, ctx) => {
    const plate = normalisePlate(value);
    if (!plate) {
      ctx.addIssue({ code: 'custom', message: 'Must be a French plate: AB-123-CD, or 1234 AB 56 for the older series' });
      return z.NEVER;
    }
    return plate;
  });

const maxYear = () => new Date().getUTCFullYear() + 1;

export const CreateVehicleBody = z.object({
  make: text(60),
  model: text(80),
  year: z.coerce
    .number()
    .int()
    .min(1900)
    .refine((y) => y <= maxYear(), { message: 'Must not be later than next year' }),
  vin: vinField.nullish(),
  plate: plateField.nullish(),
  fuel: z.enum(FUELS).nullish(),
  engine: text(80).nullish(),
  mileage: z.coerce.number().int().min(0).max(2_000_000).nullish(),
  nickname: text(60).nullish(),
});
export type CreateVehicleBody = z.infer<typeof CreateVehicleBody>;

export const UpdateVehicleBody = CreateVehicleBody.partial();
export type UpdateVehicleBody = z.infer<typeof UpdateVehicleBody>;

export const VehicleParams = z.object({ vehicle: z.coerce.number().int().min(1).max(2_147_483_647) });

export const LookupQuery = z
  .object({ vin: vinField.optional(), plate: plateField.optional() })
  .refine((q) => Boolean(q.vin) !== Boolean(q.plate), { message: 'Give either vin or plate', path: ['vin'] });
export type LookupQuery = z.infer<typeof LookupQuery>;

export const IdentifyBody = z.object({ vin: vinField.optional(), plate: plateField.optional() });

export const RepairVehicleResponse = z.object({
  id: z.string(),
  make: z.string(),
  model: z.string(),
  variant: z.string().nullable(),
  year_from: z.number().int(),
  year_to: z.number().int().nullable(),
  fuel: z.string().nullable(),
  engine_code: z.string().nullable(),
  engine_capacity_cc: z.number().int().nullable(),
  power_kw: z.number().nullable(),
  category: z.string(),
});

export const VehicleResponse = z.object({
  id: z.number().int(),
  make: z.string(),
  model: z.string(),
  year: z.number().int(),
  vin: z.string().nullable(),
  plate: z.string().nullable(),
  fuel: z.enum(FUELS).nullable(),
  engine: z.string().nullable(),
  mileage: z.number().int().nullable(),
  nickname: z.string().nullable(),
  repairdata_vehicle_id: z.string().nullable(),
  identified_at: timestamp.nullable(),
  created_at: timestamp,
  updated_at: timestamp,
});

export function presentVehicle(v: Vehicle): z.infer<typeof VehicleResponse> {
  return {
    id: v.id,
    make: v.make,
    model: v.model,
    year: v.year,
    vin: v.vin,
    plate: v.plate,
    fuel: v.fuel,
    engine: v.engine,
    mileage: v.mileageKm,
    nickname: v.nickname,
    repairdata_vehicle_id: v.repairdataVehicleId,
    identified_at: iso(v.identifiedAt),
    created_at: iso(v.createdAt),
    updated_at: iso(v.updatedAt),
  };
}

export function presentRepairVehicle(v: RepairVehicle): z.infer<typeof RepairVehicleResponse> {
  return {
    id: v.id,
    make: v.make,
    model: v.model,
    variant: v.variant,
    year_from: v.yearFrom,
    year_to: v.yearTo,
    fuel: v.fuel,
    engine_code: v.engineCode,
    engine_capacity_cc: v.engineCapacityCc,
    power_kw: v.powerKw,
    category: v.category,
  };
}
