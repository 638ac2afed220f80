import { randomUUID } from 'node:crypto';
import cors from '@fastify/cors';
import rateLimit, { type FastifyRateLimitStore } from '@fastify/rate-limit';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import Fastify, { type FastifyInstance, type FastifyRequest, type FastifyServerOptions, type RouteOptions } from 'fastify';
import { validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { Redis } from 'ioredis';
import { hasUnstorableText, UNSTORABLE_TEXT_MESSAGE, unstorableTextPaths } from '@repo/schemas';
import { registerBodyGuards } from './body-guards.js';
import { errorHandlerPlugin, handleFrameworkError } from './error-handler.js';
import { AppError } from './errors.js';
import { serializeError } from './log-errors.js';
import { openApiOptions } from './openapi.js';
import { serializerCompiler } from './serializer.js';

export interface ServerOptions {
  logLevel: string;
  trustProxy?: boolean;
  bodyLimit?: number;
  /** Extra pino options, e.g. a destination stream in tests. */
  logger?: FastifyServerOptions['logger'];
  /** How long a shutdown waits at most for the requests still being handled. Default 8 s (runServer gives up at 10). */
  drainMs?: number;
  /**
   * Called as each route is declared, before any plugin's own routes (the route table of
   * docs/routes.md reads where each one is declared). Unset in production: no hook, no cost.
   */
  onRoute?: (route: RouteOptions) => void;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Query parameters whose values are credentials: e-mailed link tokens, codes, keys, the live tail's
 * access_token and ticket (single-use, but a log line may be read before the ticket is).
 */
const SECRET_PARAM = /token|code|otp|secret|key|signature|password|ticket/i;
const REDACTED = '[REDACTED]';

/**
 * The one list, for both services, of request headers that carry credentials: a bearer token or
 * cookie, and the log tracker's ingest key. They are removed from any log line that holds a
 * request's headers (an app's own `req` serializer, a plugin's).
 */
export const REDACTED_HEADERS = ['authorization', 'cookie', 'x-ingest-key'] as const;

function decodeKey(key: string): string {
  try {
    return decodeURIComponent(key.replace(/\+/g, ' '));
  } catch {
    return key;
  }
}

/**
 * The URL with the values of credential-like query parameters replaced, fit for a log line; the
 * rest is kept as sent. Keys are compared decoded, as the query parser reads them:
 * `access%5Ftoken=…` is the same parameter.
 */
export function redactUrl(url: string): string {
  const start = url.indexOf('?');
  if (start === -1) return url;
  const pairs = url
    .slice(start + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const key = eq === -1 ? pair : pair.slice(0, eq);
      return SECRET_PARAM.test(decodeKey(key)) ? `${key}=${REDACTED}` : pair;
    });
  return `${url.slice(0, start)}?${pairs.join('&')}`;
}

const redactString = (value: unknown) => (typeof value === 'string' ? redactUrl(value) : value);

/** What the serializer reads of a request: Fastify's, or a raw one (a WebSocket upgrade logged by a plugin). */
interface LoggedRequest {
  method?: string;
  url?: string;
  host?: string;
  ip?: string;
  socket?: { remotePort?: number; remoteAddress?: string };
}

/** Fastify's request serializer, but a credential in the query string never reaches the log. */
function serializeRequest(request: LoggedRequest) {
  return {
    method: request.method,
    url: request.url === undefined ? undefined : redactUrl(request.url),
    host: request.host,
    remoteAddress: request.ip ?? request.socket?.remoteAddress,
    remotePort: request.socket?.remotePort,
  };
}

/**
 * The logger's options: the defaults (credentials redacted, link tokens out of URLs, errors without
 * what a request sent — log-errors.ts) under the options given (a test's stream), whose own
 * serializers add to ours.
 */
function loggerOptions(logger: ServerOptions['logger'], level: string): FastifyServerOptions['logger'] {
  if (logger === false) return false;
  const err = serializeError as (error: Error) => { type: string; message: string; stack: string; [key: string]: unknown };
  const defaults = {
    level,
    redact: { paths: REDACTED_HEADERS.map((name) => `req.headers["${name}"]`), remove: true },
    // `path` and `url` are how plugins log a URL of their own (@fastify/websocket logs `path`).
    serializers: { req: serializeRequest, err, path: redactString, url: redactString },
  };
  if (!logger || typeof logger !== 'object') return defaults;
  return { ...defaults, ...logger, serializers: { ...defaults.serializers, ...logger.serializers } };
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The route checks the text of its own input for what PostgreSQL cannot store (OTLP counts
     * such records as rejected and stores the rest), so the server-wide check leaves it alone.
     */
    checksOwnText?: boolean;
  }
}

/**
 * A Fastify instance with the conventions both services share: zod validation and serialisation,
 * request ids taken from `x-request-id` (or generated) and echoed back, structured pino logs that
 * never carry credentials, and the one error envelope.
 */
export function createServer(options: ServerOptions) {
  const app = Fastify({
    logger: loggerOptions(options.logger, options.logLevel),
    trustProxy: options.trustProxy ?? false,
    bodyLimit: options.bodyLimit ?? 1024 * 1024,
    requestIdHeader: false,
    genReqId: (req) => {
      const incoming = req.headers['x-request-id'];
      return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    },
    // A path parameter over the router's length limit, or a URL that does not decode: the envelope.
    frameworkErrors: handleFrameworkError,
  }).withTypeProvider<ZodTypeProvider>();
  if (options.onRoute) app.addHook('onRoute', options.onRoute);

  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  // The APIs speak JSON only: without this, Fastify's built-in text/plain parser hands a string to
  // the route (a 422 "expected object" instead of the 400 for a wrong content type).
  app.removeContentTypeParser('text/plain');
  // The shared hooks run on every request: written with `done` (no promise, no microtask each).
  // The requests still being handled, their client there or gone: a shutdown waits for them
  // before the app's pools close. Node's server.close() waits only for open connections, and a
  // client that left has none: its handler would go on against a closed pool. Handling ends once
  // the answer is given (onSend) and its response has closed: written out, a stream included, or
  // cut short by the client (Fastify's onResponse never comes then). A WebSocket upgrade is not
  // waited for: its connection closes on its own terms.
  const running = new Set<FastifyRequest>();
  let drained: (() => void) | undefined;
  const ended = (request: FastifyRequest) => {
    if (running.delete(request) && running.size === 0) drained?.();
  };
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    if (request.headers.upgrade === undefined) running.add(request);
    done();
  });
  registerBodyGuards(app);
  // PostgreSQL cannot store a NUL character or an unpaired surrogate (which JSON can carry as
  // `"\ud800"`): any such string in a body, query or path answers 422 naming where it is, for every
  // route, before a query could fail on it. Checked once validation has run, so what a route's schema
  // drops (an unknown query parameter) is not held against the request.
  app.addHook('preHandler', (request, _reply, done) => {
    if (request.routeOptions.config.checksOwnText) return done();
    // A route without a query schema reads no query parameter: nothing of the query reaches it.
    const query = request.routeOptions.schema?.querystring ? request.query : undefined;
    // The common answer, nothing to refuse, is found without building a path.
    if (!hasUnstorableText(request.params) && !hasUnstorableText(query) && !hasUnstorableText(request.body)) return done();
    const errors: Record<string, string[]> = {};
    for (const part of [request.params, query, request.body]) {
      for (const path of unstorableTextPaths(part)) errors[path || 'body'] = [UNSTORABLE_TEXT_MESSAGE];
    }
    done(Object.keys(errors).length > 0 ? AppError.validation(errors) : undefined);
  });
  // Once closing, the answer to a request already in flight ends its connection: Node's server.close()
  // only ends the connections idle at that moment, so a keep-alive client's connection would
  // otherwise hold the shutdown until the client left (or the shutdown timed out, jobs and pools
  // unclosed). Fastify itself closes only the connections of requests that arrive after.
  // Requests arriving from then on are answered 503 by Fastify; those in flight are waited for
  // (at most `drainMs`).
  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    if (running.size === 0) return done();
    const finish = () => {
      clearTimeout(timer);
      drained = undefined;
      done();
    };
    const timer = setTimeout(finish, options.drainMs ?? 8_000);
    drained = finish;
  });
  app.addHook('onSend', (request, reply, payload, done) => {
    // Every answer is what its Content-Type says (no sniffing), and none is cached unless its
    // route says so: answers carry tokens, keys and personal data.
    reply.header('x-content-type-options', 'nosniff');
    if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store');
    if (closing) reply.header('connection', 'close');
    if (running.has(request)) {
      if (reply.raw.destroyed) ended(request);
      else reply.raw.once('close', () => ended(request));
    }
    done(null, payload);
  });
  app.register(errorHandlerPlugin);
  return app;
}

export type AppInstance = ReturnType<typeof createServer>;

export interface FoundationOptions {
  cors: { origins: string[] };
  rateLimit: {
    authenticated: number;
    public: number;
    /** Where the counts live: this process, Redis (`redisUrl`), or the app's PostgreSQL database (`countHit`). */
    store: 'memory' | 'postgres' | 'redis';
    redisUrl?: string;
    /**
     * Counts one request on a key with its limit in a fixed window, answering its count and the
     * milliseconds left (see `createRequestCounter` in @repo/db): the `postgres` store.
     */
    countHit?: (key: string, windowMs: number, max: number) => Promise<{ current: number; ttl: number }>;
    /** Names the authenticated caller of a request cheaply (no database), or undefined for a public caller. */
    identify?: (request: FastifyRequest) => string | undefined;
    /**
     * A caller with a budget of its own (an ingest key shipping logs, say): its key and limit per
     * minute, or undefined to fall back to `identify`. Checked first; must be cheap.
     */
    tier?: (request: FastifyRequest) => { key: string; max: number } | undefined;
  };
  docs: {
    title: string;
    description: string;
    version: string;
    prefix: string;
    /** Serve the browsable docs and the document at `prefix` (default true); the document is built either way. */
    enabled?: boolean;
    tags?: { name: string; description: string }[];
    /** Security schemes beyond `bearerAuth`, e.g. an API-key header. */
    securitySchemes?: Record<string, { type: 'apiKey'; in: 'header'; name: string; description?: string }>;
  };
}

/**
 * CORS, rate limits and the OpenAPI document. Registered before the routes so that swagger sees
 * every route and the rate limiter runs on every request.
 */
export async function registerFoundation(app: FastifyInstance, options: FoundationOptions) {
  // The CORS plugin answers every OPTIONS request; one that is not a preflight (no Origin, or no
  // Access-Control-Request-Method) would get its plain-text 400. No route answers OPTIONS: 404.
  app.addHook('onRequest', (request, _reply, done) => {
    if (request.method !== 'OPTIONS' || (request.headers.origin && request.headers['access-control-request-method'])) return done();
    done(new AppError('route_not_found', `Route OPTIONS ${request.url.split('?')[0]} not found`));
  });
  // A request without an Origin header is no browser's cross-origin request (the mobile apps, CI
  // pipelines, curl): it gets no CORS headers, which only a browser reads. An origin off the list
  // gets none either, its preflight included. `Vary: Origin` is sent on every answer all the same.
  const origins = new Set(options.cors.origins);
  const anyOrigin = origins.has('*');
  await app.register(cors, {
    origin: (origin, callback) => callback(null, origin !== undefined && (anyOrigin || origins.has(origin))),
    credentials: true,
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
    exposedHeaders: ['x-request-id', 'idempotent-replayed', 'retry-after', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'],
  });

  const { identify, tier } = options.rateLimit;
  const redis =
    options.rateLimit.store === 'redis' && options.rateLimit.redisUrl
      ? new Redis(options.rateLimit.redisUrl, { connectTimeout: 500, maxRetriesPerRequest: 1, lazyConnect: false })
      : undefined;
  if (redis) {
    // Without a listener ioredis reports connection errors as unhandled; the limiter fails open
    // (skipOnError) while Redis is away, and the log says so.
    redis.on('error', (error: Error) => app.log.warn({ err: error }, 'rate-limit store unreachable'));
    app.addHook('onClose', async () => void (await redis.quit()));
  }

  const { countHit } = options.rateLimit;
  const store = options.rateLimit.store === 'postgres' && countHit ? sharedStore(countHit) : undefined;

  await app.register(rateLimit, {
    // The limiter runs from the app-level hook below; the plugin's own per-route hook would only
    // find the request counted already. Routes with limits of their own still get the plugin's.
    global: false,
    redis,
    store,
    skipOnError: true,
    keyGenerator: (request) => {
      const special = tier?.(request);
      if (special) return `tier:${special.key}`;
      const who = identify?.(request);
      return who ? `user:${who}` : `ip:${request.ip}`;
    },
    max: (request, key) => {
      if (key.startsWith('tier:')) return tier?.(request)?.max ?? options.rateLimit.authenticated;
      return key.startsWith('user:') ? options.rateLimit.authenticated : options.rateLimit.public;
    },
    timeWindow: 60_000,
    // The browsable docs load several assets at once; they are static and not worth limiting.
    allowList: (request) => request.url === options.docs.prefix || request.url.startsWith(`${options.docs.prefix}/`),
    errorResponseBuilder: (_request, context) =>
      new AppError('rate_limited', `Too many requests, retry in ${Math.ceil(context.ttl / 1000)} seconds`, {
        headers: { 'retry-after': String(Math.max(1, Math.ceil(context.ttl / 1000))) },
      }),
  });
  // The plugin appends its hook to each route's own onRequest hooks, so a route guarded by
  // `onRequest: app.auth.authenticate` would reject a bad token before the limiter ever counted it
  // (and unknown routes would not be limited at all). Run the limiter first, as an app-level hook;
  // routes with their own `config.rateLimit` (false, or an object) keep the plugin's handling.
  const limiter = app.rateLimit();
  app.addHook('onRequest', function (request, reply, done) {
    if (request.routeOptions.config.rateLimit !== undefined) return done();
    limiter.call(this, request, reply).then(() => done(), done);
  });

  await app.register(swagger, openApiOptions(options.docs));
  if (options.docs.enabled === false) return;
  await app.register(swaggerUi, {
    routePrefix: options.docs.prefix,
    // The validator badge would send the document to a third party.
    uiConfig: { docExpansion: 'list', validatorUrl: null },
    // swagger-ui's own policy (its scripts by hash, nothing from elsewhere), without
    // `upgrade-insecure-requests`, which would break the docs served over plain HTTP in development.
    staticCSP: true,
    transformStaticCSP: (header) => header.replace(/\s*upgrade-insecure-requests;?/, ''),
  });
}

/** What @fastify/rate-limit gives a store's `child`: the route's options, under `routeInfo` (empty for `app.rateLimit()`). */
type RouteLimitOptions = Parameters<FastifyRateLimitStore['child']>[0] & { routeInfo?: { method?: string | string[]; url?: string } };

/**
 * A @fastify/rate-limit store over a shared counter (the PostgreSQL one): every instance of the
 * app counts the same requests. Keys are namespaced `request:`, and a route with limits of its own
 * counts apart, as the plugin's own stores do.
 */
function sharedStore(countHit: NonNullable<FoundationOptions['rateLimit']['countHit']>) {
  return class SharedRateLimitStore implements FastifyRateLimitStore {
    constructor(
      readonly options: unknown,
      readonly prefix = 'request:',
    ) {}

    incr(key: string, callback: (error: Error | null, result?: { current: number; ttl: number }) => void, timeWindow: number, max: number) {
      countHit(this.prefix + key, timeWindow, max).then(
        (result) => callback(null, result),
        (error: Error) => callback(error),
      );
    }

    child(routeOptions: RouteLimitOptions) {
      const route = routeOptions.routeInfo;
      return new SharedRateLimitStore(routeOptions, `${this.prefix}${String(route?.method ?? '')}${route?.url ?? ''}-`);
    }
  };
}

/** Route options that take a route out of the rate limiter (health probes, documentation). */
export const noRateLimit = { rateLimit: false } as const;
