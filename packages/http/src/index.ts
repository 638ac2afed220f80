export * from './errors.js';
export * from './pagination.js';
export { errorHandlerPlugin, handleError } from './error-handler.js';
export { serializeError, statementName } from './log-errors.js';
export { createServer, REDACTED_HEADERS, redactUrl, registerFoundation, noRateLimit, type AppInstance, type FoundationOptions, type ServerOptions } from './server.js';
export type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
export { healthRoutes } from './health.js';
export { runServer } from './run.js';
export { openApiOptions, type OpenApiDocumentOptions } from './openapi.js';
