/** The ai module's public entry: what the rest of the app may use of it. */
export { aiRoutes } from './ai.routes.js';
export { type AiService, createAiService } from './ai.service.js';
export { createSuggestionsService } from './suggestions.service.js';
