/** The ai module's public entry: what the rest of the app may use of it. */
import { createOpenAiCompatibleModel } from '@repo/ai';
import type { RepairDataProvider } from '../../integrations/repairdata/index.js';
import type { ModuleContext } from '../context.js';
import { aiRoutes } from './ai.routes.js';
import { createAiService } from './ai.service.js';
import { createSuggestionsService } from './suggestions.service.js';

export { type AiService } from './ai.service.js';

/** Diagnosis help: the model behind a cache (or the built-in rules), and suggestions for a vehicle. */
export function aiModule(ctx: ModuleContext, more: { repairData: RepairDataProvider }) {
  const { db, app } = ctx;
  const { ai: aiConfig } = ctx.config;
  const ai = createAiService({
    db,
    model: aiConfig.url
      ? createOpenAiCompatibleModel({ url: aiConfig.url, apiKey: aiConfig.apiKey, model: aiConfig.model, timeoutMs: aiConfig.timeoutMs })
      : undefined,
    cacheTtlHours: aiConfig.cacheTtlHours,
    log: app.log,
  });
  const suggestions = createSuggestionsService({ db, ai, repairData: more.repairData });
  return { ai, routes: aiRoutes({ ai, suggestions, modelName: aiConfig.url ? aiConfig.model : 'builtin' }) };
}
