import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import fastifyStatic from '@fastify/static';
import { noRateLimit } from '@repo/http';
import type { FastifyContextConfig, FastifyInstance, FastifyReply } from 'fastify';

/**
 * The page's Content-Security-Policy: its own scripts, styles and API only. No inline script or
 * style, no eval, no frame, no form posted elsewhere; `connect-src 'self'` covers the API and the
 * live tail's WebSocket on the same host.
 */
export const EXPLORER_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * The folder of the built log explorer (`@repo/log-explorer`'s `dist/`), or undefined when it has
 * not been built: the API serves on without it.
 */
export function explorerRoot(): string | undefined {
  try {
    const pkg = createRequire(import.meta.url).resolve('@repo/log-explorer/package.json');
    const dist = join(dirname(pkg), 'dist');
    return existsSync(join(dist, 'index.html')) ? dist : undefined;
  } catch {
    return undefined;
  }
}

/** A file name of the build's assets folder. */
const ASSET_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/;

/** Headers of every file of the page: its policy, and nothing about it leaves for another site. */
function pageHeaders(reply: FastifyReply) {
  reply.header('content-security-policy', EXPLORER_CSP);
  reply.header('referrer-policy', 'no-referrer');
  reply.header('x-frame-options', 'DENY');
  reply.header('cross-origin-opener-policy', 'same-origin');
  reply.header('cross-origin-resource-policy', 'same-origin');
}

/**
 * The log explorer at `/`: the page itself (revalidated on every load, so a deployment shows at
 * once) and its files under `/assets/`, named by their content's hash and cached for a year. The
 * build leaves gzip and brotli copies beside each file, sent to the browsers that accept them.
 * Static, public and not rate limited: the page asks for a token before it reads anything.
 */
export function explorerRoutes(options: { root: string }) {
  return async (app: FastifyInstance) => {
    await app.register(fastifyStatic, { root: options.root, serve: false, preCompressed: true });
    const hidden = { hide: true };
    // The rate limiter's own option (its types are @repo/http's, where the limiter is registered).
    const unlimited = noRateLimit as FastifyContextConfig;
    app.get('/', { config: unlimited, schema: hidden }, (_request, reply) => {
      pageHeaders(reply);
      reply.header('cache-control', 'no-cache');
      return reply.sendFile('index.html', { cacheControl: false, lastModified: false });
    });
    app.get<{ Params: { '*': string } }>('/assets/*', { config: unlimited, schema: hidden }, (request, reply) => {
      // The build names its files with letters, digits, '-', '_' and '.': anything else (a folder,
      // a way up) is not one of them.
      const name = request.params['*'];
      if (!ASSET_NAME.test(name)) return reply.callNotFound();
      pageHeaders(reply);
      reply.header('cache-control', 'public, max-age=31536000, immutable');
      return reply.sendFile(`assets/${name}`, { cacheControl: false });
    });
  };
}
