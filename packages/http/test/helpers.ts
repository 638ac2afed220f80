import type { FastifyRequest } from 'fastify';
import { createServer, registerFoundation, type AppInstance, type FoundationOptions } from '../src/index.js';

export const FRONTEND_ORIGIN = 'http://localhost:5173';

export interface TestAppOptions {
  publicLimit?: number;
  authenticatedLimit?: number;
  identify?: (request: FastifyRequest) => string | undefined;
  bodyLimit?: number;
  logger?: Parameters<typeof createServer>[0]['logger'];
  docsEnabled?: boolean;
  corsOrigins?: string[];
}

/** A server with the shared foundation (CORS, rate limits, docs) registered, ready for routes. */
export async function buildApp(options: TestAppOptions = {}): Promise<AppInstance> {
  const app = createServer({ logLevel: 'silent', bodyLimit: options.bodyLimit, logger: options.logger });
  const foundation: FoundationOptions = {
    cors: { origins: options.corsOrigins ?? ['http://localhost:3000', FRONTEND_ORIGIN] },
    rateLimit: {
      authenticated: options.authenticatedLimit ?? 1000,
      public: options.publicLimit ?? 1000,
      store: 'memory',
      identify: options.identify,
    },
    docs: {
      title: 'Test API',
      description: 'The API the shared http package tests run against',
      version: '1.0.0',
      prefix: '/docs',
      enabled: options.docsEnabled,
      tags: [{ name: 'logs', description: 'Log ingestion' }],
    },
  };
  await registerFoundation(app, foundation);
  return app;
}

/** Parses a JSON response body into a plain record (the envelope under test). */
export function json(response: { body: string }): Record<string, unknown> {
  return JSON.parse(response.body) as Record<string, unknown>;
}
