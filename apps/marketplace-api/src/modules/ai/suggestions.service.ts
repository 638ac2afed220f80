import { createHash } from 'node:crypto';
import { AppError } from '@repo/http';
import { z } from 'zod';
import type { DbTx } from '../../db/index.js';
import type { Lang } from '../../db/schema/index.js';
import { RepairDataUnavailableError, type RepairDataProvider, type RepairTask } from '../../integrations/repairdata/repairdata.js';
import type { Actor } from '../../lib/context.js';
import { findOwnVehicle } from '../vehicles/index.js';
import * as repo from './ai.repository.js';
import type { AiService } from './ai.service.js';
import { normalise, rank } from './text-match.js';

const ModelAnswer = z.object({
  service_ids: z.array(z.number().int()).max(5),
  task_codes: z.array(z.string()).max(10).default([]),
  explanation: z.string().max(2000).default(''),
});

interface Suggestion {
  serviceIds: { id: number; confidence: number }[];
  taskCodes: string[];
  explanation: string;
}

const BUILTIN_EXPLANATION: Record<Lang, (n: number) => string> = {
  fr: (n) =>
    n > 0
      ? 'Suggestions établies à partir des mots de votre description et du catalogue des prestations.'
      : "Aucune prestation du catalogue ne correspond clairement à la description : un diagnostic est conseillé.",
  en: (n) =>
    n > 0
      ? 'Suggestions based on the words of your description and the service catalogue.'
      : 'No catalogue service clearly matches the description: a diagnosis is advised.',
};

/** Suggests the catalogue services (and repair tasks, for an identified vehicle) matching a problem description. */
export function createSuggestionsService(deps: { db: DbTx; ai: AiService; repairData: RepairDataProvider }) {
  const { db, ai, repairData } = deps;

  async function tasksFor(actor: Actor, vehicleId: number | undefined) {
    if (vehicleId === undefined) return { repairVehicleId: null, tasks: [] as RepairTask[] };
    // Only the caller's own vehicle: anyone else's is not found.
    const vehicle = await findOwnVehicle(db, actor.userId, vehicleId);
    if (!vehicle) throw AppError.notFound('Vehicle');
    if (!vehicle.repairdataVehicleId) return { repairVehicleId: null, tasks: [] };
    try {
      return { repairVehicleId: vehicle.repairdataVehicleId, tasks: (await repairData.searchTasks(vehicle.repairdataVehicleId, {})) ?? [] };
    } catch (error) {
      // Suggestions stand without repair tasks when the repair-data service is down.
      if (error instanceof RepairDataUnavailableError) return { repairVehicleId: vehicle.repairdataVehicleId, tasks: [] };
      throw error;
    }
  }

  return {
    async suggest(actor: Actor, body: { description: string; vehicle_id?: number; lang: Lang }) {
      const [catalogue, { repairVehicleId, tasks }] = await Promise.all([repo.activeServices(db), tasksFor(actor, body.vehicle_id)]);
      const catalogueVersion = createHash('sha256')
        .update(catalogue.map((s) => `${s.id}:${s.name}`).join('|'))
        .digest('hex')
        .slice(0, 16);
      const byId = new Map(catalogue.map((s) => [s.id, s]));
      const taskByCode = new Map(tasks.map((t) => [t.code, t]));

      const answer = await ai.run<Suggestion>({
        feature: 'service_suggestion',
        input: { description: normalise(body.description).replace(/\s+/g, ' ').trim(), lang: body.lang, catalogueVersion, repairVehicleId },
        json: true,
        maxTokens: 500,
        messages: [
          {
            role: 'system',
            content: [
              'You help the client of a car-repair marketplace in France pick the right service for their problem.',
              'Choose at most 3 services from the catalogue (by id) and at most 5 repair tasks (by code) that match the description,',
              'most likely first. Answer only with JSON: {"service_ids": number[], "task_codes": string[], "explanation": string}.',
              `Write the explanation (at most 60 words) in ${body.lang === 'fr' ? 'French' : 'English'}; do not invent prices.`,
              `Catalogue:\n${catalogue.map((s) => `${s.id}: ${s.name} (${s.category})`).join('\n')}`,
              tasks.length ? `Repair tasks for this vehicle:\n${tasks.map((t) => `${t.code}: ${t.name}`).join('\n')}` : 'No repair tasks known.',
            ].join('\n'),
          },
          { role: 'user', content: body.description },
        ],
        parse(text) {
          const parsed = ModelAnswer.parse(JSON.parse(text));
          const ids = parsed.service_ids.filter((id) => byId.has(id));
          if (ids.length === 0 && parsed.service_ids.length > 0) throw new Error('model answered services outside the catalogue');
          return {
            serviceIds: ids.map((id, i) => ({ id, confidence: Math.max(0.5, 0.9 - i * 0.15) })),
            taskCodes: parsed.task_codes.filter((c) => taskByCode.has(c)),
            explanation: parsed.explanation,
          };
        },
        fallback() {
          const services = rank(
            body.description,
            catalogue.map((s) => ({
              item: s.id,
              fields: [
                { text: s.name, weight: 3 },
                { text: s.category, weight: 1 },
                { text: s.description ?? '', weight: 1 },
              ],
            })),
            3,
          );
          const matchedTasks = rank(body.description, tasks.map((t) => ({ item: t.code, fields: [{ text: t.name, weight: 1 }] })), 5);
          return {
            serviceIds: services.map((s) => ({ id: s.item, confidence: s.confidence })),
            taskCodes: matchedTasks.map((t) => t.item),
            explanation: BUILTIN_EXPLANATION[body.lang](services.length),
          };
        },
      });

      const value = answer.value;
      return {
        // A cached answer may name a service removed since: only live ones are shown.
        services: value.serviceIds.flatMap(({ id, confidence }) => {
          const s = byId.get(id);
          return s ? [{ id: s.id, slug: s.slug, name: s.name, category: s.category, confidence }] : [];
        }),
        tasks: value.taskCodes.flatMap((code) => {
          const t = taskByCode.get(code);
          return t ? [{ code: t.code, name: t.name, system_code: t.systemCode }] : [];
        }),
        explanation: value.explanation,
        ai: { source: answer.source, cached: answer.cached, cache_key: answer.cacheKey },
      };
    },
  };
}

export type SuggestionsService = ReturnType<typeof createSuggestionsService>;
