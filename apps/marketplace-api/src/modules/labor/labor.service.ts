import { AppError } from '@repo/http';
import type { DbTx } from '../../db/index.js';
import type { Lang } from '../../db/schema/index.js';
import type { RepairDataProvider, RepairVehicle } from '../../integrations/repairdata/repairdata.js';
import type { Actor } from '../../lib/context.js';
import type { AiService } from '../ai/index.js';
import type { TariffGridsService } from '../tariff-grids/index.js';
import { fromRepairData } from '../vehicles/index.js';
import * as repo from './labor.repository.js';
import type { EstimateBody, EstimateResponse } from './labor.schemas.js';

const euros = (cents: number, lang: Lang) =>
  new Intl.NumberFormat(lang === 'fr' ? 'fr-FR' : 'en-GB', { style: 'currency', currency: 'EUR' }).format(cents / 100);
const hoursText = (hours: number, lang: Lang) => new Intl.NumberFormat(lang === 'fr' ? 'fr-FR' : 'en-GB', { maximumFractionDigits: 2 }).format(hours);

/** The deterministic explanation of an estimate, in the prestataire's language. */
export function explainEstimate(estimate: Omit<EstimateResponse, 'explanation' | 'ai'>, lang: Lang): string {
  const rate = euros(estimate.rate.hourly_rate_cents, lang);
  const lines = estimate.lines.map(
    (l) => `${l.name}: ${hoursText(l.hours, lang)} h × ${rate} = ${euros(l.labour_cents, lang)}`,
  );
  const source =
    lang === 'fr'
      ? { quote: 'le taux saisi pour ce devis', profile: 'votre taux horaire', tariff_grid: 'la grille tarifaire applicable' }[estimate.rate.source]
      : { quote: 'the rate given for this quote', profile: 'your hourly rate', tariff_grid: 'the applicable tariff grid' }[estimate.rate.source];
  const vehicle = `${estimate.vehicle.make} ${estimate.vehicle.model}${estimate.vehicle.variant ? ` ${estimate.vehicle.variant}` : ''}`;
  return lang === 'fr'
    ? `Main-d'œuvre pour ${vehicle}, au temps barème constructeur et à ${rate} de l'heure (${source}). ${lines.join(' ; ')}. ` +
        `Total : ${hoursText(estimate.total_hours, lang)} h, soit ${euros(estimate.labour_total_cents, lang)} HT hors pièces.`
    : `Labour for ${vehicle}, at the manufacturer's standard times and ${rate} per hour (${source}). ${lines.join('; ')}. ` +
        `Total: ${hoursText(estimate.total_hours, lang)} h, ${euros(estimate.labour_total_cents, lang)} before tax, parts excluded.`;
}

/** Instant labour quotes: repair times × the prestataire's hourly rate (or the tariff grid's). */
export function createLaborService(deps: { db: DbTx; repairData: RepairDataProvider; tariffGrids: TariffGridsService; ai: AiService }) {
  const { db, repairData, tariffGrids, ai } = deps;

  async function vehicleOf(body: EstimateBody): Promise<RepairVehicle> {
    const found = body.repairdata_vehicle_id
      ? await fromRepairData(() => repairData.vehicle(body.repairdata_vehicle_id!))
      : await fromRepairData(() => repairData.identify(body.vin ? { vin: body.vin } : { plate: body.plate! }));
    if (!found) throw new AppError('not_found', 'Vehicle not found in the repair data');
    return found;
  }

  return {
    async estimate(actor: Actor, body: EstimateBody): Promise<EstimateResponse> {
      const profile = await repo.findRateContext(db, actor.userId);
      if (!profile) throw new AppError('forbidden', 'Only prestataires with a business profile can estimate labour');

      const vehicle = await vehicleOf(body);
      const result = await fromRepairData(() => repairData.repairTimes(vehicle.id, body.task_codes));
      if (!result) throw new AppError('not_found', 'Vehicle not found in the repair data');
      if (result.unknown.length > 0) {
        const errors: Record<string, string[]> = {};
        body.task_codes.forEach((c, i) => {
          if (result.unknown.includes(c)) errors[`task_codes.${i}`] = [`Unknown task for this vehicle: ${c}`];
        });
        throw AppError.validation(errors);
      }

      let rate: EstimateResponse['rate'];
      if (body.hourly_rate_cents) rate = { hourly_rate_cents: body.hourly_rate_cents, source: 'quote', tariff_grid_id: null };
      else if (profile.hourlyRateCents) rate = { hourly_rate_cents: profile.hourlyRateCents, source: 'profile', tariff_grid_id: null };
      else {
        const grid = await tariffGrids.applicable(vehicle.category, profile.regionCode ?? null);
        if (!grid) {
          throw AppError.validation({
            hourly_rate_cents: ['No hourly rate: set one in your profile or give one for this quote (no tariff grid applies)'],
          });
        }
        rate = { hourly_rate_cents: grid.hourlyRateCents, source: 'tariff_grid', tariff_grid_id: grid.id };
      }

      // Lines in the order asked for.
      const byCode = new Map(result.times.map((t) => [t.taskCode, t]));
      const lines = body.task_codes.map((code) => {
        const t = byCode.get(code)!;
        return { task_code: code, name: t.name, hours: t.hours, labour_cents: Math.round(t.hours * rate.hourly_rate_cents) };
      });
      const estimate = {
        vehicle: { id: vehicle.id, make: vehicle.make, model: vehicle.model, variant: vehicle.variant, category: vehicle.category },
        lines,
        total_hours: Math.round(lines.reduce((s, l) => s + l.hours, 0) * 100) / 100,
        labour_total_cents: lines.reduce((s, l) => s + l.labour_cents, 0),
        currency: 'EUR' as const,
        rate,
      };
      if (!body.explain) return { ...estimate, explanation: null, ai: null };

      const lang = profile.lang;
      const answer = await ai.run<string>({
        feature: 'estimate_explanation',
        input: { estimate, lang },
        json: false,
        maxTokens: 300,
        messages: [
          {
            role: 'system',
            content:
              `You explain a car-repair labour estimate to the garage's customer, in ${lang === 'fr' ? 'French' : 'English'}, ` +
              'in at most 120 words: what each task is, why it takes that time, and the total. Use only the figures given; ' +
              'amounts are in euro cents in the data, write them in euros. Parts are not included.',
          },
          { role: 'user', content: JSON.stringify(estimate) },
        ],
        parse: (text) => text.slice(0, 2000),
        fallback: () => explainEstimate(estimate, lang),
      });
      return { ...estimate, explanation: answer.value, ai: { source: answer.source, cached: answer.cached, cache_key: answer.cacheKey } };
    },
  };
}

export type LaborService = ReturnType<typeof createLaborService>;
