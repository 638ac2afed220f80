import { z } from 'zod';
import { plateField, vinField } from '../vehicles/index.js';

const code = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'Must be a task code');

export const EstimateBody = z
  .object({
    repairdata_vehicle_id: code.optional(),
    vin: vinField.optional(),
    plate: plateField.optional(),
    task_codes: z
      .array(code)
      .min(1)
      .max(50)
      .refine((codes) => new Set(codes).size === codes.length, { message: 'Task codes must not repeat' }),
    // A rate for this quote only, overriding the profile's and the tariff grid's.
    hourly_rate_cents: z.number().int().min(1).max(100_000).optional(),
    explain: z.boolean().default(false),
  })
  .refine((b) => [b.repairdata_vehicle_id, b.vin, b.plate].filter(Boolean).length === 1, {
    message: 'Give exactly one of repairdata_vehicle_id, vin or plate',
    path: ['repairdata_vehicle_id'],
  });
export type EstimateBody = z.infer<typeof EstimateBody>;

export const EstimateResponse = z.object({
  vehicle: z.object({ id: z.string(), make: z.string(), model: z.string(), variant: z.string().nullable(), category: z.string() }),
  lines: z.array(
    z.object({ task_code: z.string(), name: z.string(), hours: z.number(), labour_cents: z.number().int() }),
  ),
  total_hours: z.number(),
  labour_total_cents: z.number().int(),
  currency: z.literal('EUR'),
  rate: z.object({
    hourly_rate_cents: z.number().int(),
    source: z.enum(['quote', 'profile', 'tariff_grid']),
    tariff_grid_id: z.number().int().nullable(),
  }),
  explanation: z.string().nullable(),
  ai: z.object({ source: z.enum(['model', 'builtin']), cached: z.boolean(), cache_key: z.string() }).nullable(),
});
export type EstimateResponse = z.infer<typeof EstimateResponse>;
