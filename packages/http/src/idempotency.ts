import { createHash, randomUUID, type Hash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest, onSendHookHandler, preHandlerAsyncHookHandler, preParsingHookHandler, RouteOptions } from 'fastify';
import fp from 'fastify-plugin';
import { AppError } from './errors.js';

/** The request header (DESIGN.md §10) and the header of a replayed answer. */
export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';
export const REPLAYED_HEADER = 'Idempotent-Replayed';

/** 1 to 255 visible ASCII characters (0x21–0x7E): the IETF httpapi draft's key, bounded. */
export const IDEMPOTENCY_KEY_PATTERN = '^[\\x21-\\x7E]+$';
export const IDEMPOTENCY_KEY_MAX_LENGTH = 255;
const KEY = /^[\x21-\x7E]{1,255}$/;

/** How the OpenAPI documents describe the header on the routes that honour it. */
export const idempotencyKeyParameter = {
  type: 'string',
  minLength: 1,
  maxLength: IDEMPOTENCY_KEY_MAX_LENGTH,
  pattern: IDEMPOTENCY_KEY_PATTERN,
  description:
    'Makes the request safe to retry: the same key with the same request within the key time to live answers the first answer again (with `Idempotent-Replayed: true`) without doing the work again. 409 while the first is still running; 422 when reused with a different request.',
} as const;

/** What a first answer left to replay (see @repo/db `createIdempotencyStore`). */
export interface RememberedAnswer {
  status: number;
  contentType: string | null;
  location: string | null;
  body: string;
}

export type IdempotencyClaim =
  | { state: 'claimed' }
  /** `done`: its work committed, its answer not recorded yet. */
  | { state: 'running'; done?: boolean }
  | { state: 'completed'; fingerprint: string; answer: RememberedAnswer };

/**
 * The work of a claimed request, as the store follows it (@repo/db `ClaimedWork`): the commits it
 * made, and whether the answer to one was lost, so that it may or may not have happened.
 */
export interface ClaimedWork {
  id: string;
  owner: string;
  commits: number;
  uncertain: boolean;
  settled?: boolean;
}

/** Where keys live: every instance of the app must see the same ones (@repo/db `createIdempotencyStore`). */
export interface IdempotencyKeyStore {
  claim(input: { id: string; fingerprint: string; owner: string; ttlSeconds: number; staleSeconds: number }): Promise<IdempotencyClaim>;
  complete(id: string, owner: string, answer: RememberedAnswer, ttlSeconds: number): Promise<void>;
  release(id: string, owner: string): Promise<void>;
  purgeExpired(): Promise<number>;
  /**
   * Runs a route's handler as the claim's work, so that each transaction it commits records
   * itself on the claim in that transaction. Without it, a commit whose answer is lost (a failover)
   * answers 503 and a retry does the work again.
   */
  runWork?<T>(work: ClaimedWork, fn: () => T): T;
  /**
   * Settles a claim whose work lost the answer to a commit: keeps `answer` if the commit happened
   * (answers true), releases the claim if it did not (false).
   */
  settleUncertain?(id: string, owner: string, committed: number, answer: RememberedAnswer | null, ttlSeconds: number): Promise<boolean>;
}

export interface IdempotencyOptions {
  store: IdempotencyKeyStore;
  /** How long an answer is replayed (IDEMPOTENCY_KEY_TTL_HOURS). */
  ttlHours: number;
  /**
   * The authenticated caller of a request once its route's hooks have run (`user:12`, an ingest
   * key's `ingest:4`), or undefined for no caller: the header is then ignored.
   */
  scope: (request: FastifyRequest) => string | undefined;
  /**
   * Access checks the route's own hooks leave to its service, run again before an answer is
   * replayed (a caller who lost access to a project gets its 404, not the answer).
   */
  beforeReplay?: (request: FastifyRequest) => Promise<void>;
  /** A claim still running after this long is a crashed instance's and may be taken over. Default 60 s. */
  staleSeconds?: number;
  /** How often expired keys are deleted; 0: never (a test drives `purgeExpired` itself). Default 10 min. */
  purgeIntervalMs?: number;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * `false` takes an authenticated POST or PATCH out of `Idempotency-Key` handling (the Pusher
     * channel authorisation, a signature that is cheap to ask for again). Set to `true` by the
     * plugin on every route that honours the header; the OpenAPI document lists it there.
     */
    idempotencyKey?: boolean;
  }
}

/** A claim still running after this long is taken to be a crashed instance's (no write runs a minute). */
export const STALE_CLAIM_SECONDS = 60;
const PURGE_INTERVAL_MS = 10 * 60_000;
/** An answer not recorded (the database away): tried again this often, this many times. */
const SETTLE_RETRY_MS = 1000;
const SETTLE_RETRIES = 30;
/** How long a request whose commit's answer was lost waits to learn whether it happened, before 503. */
const UNCERTAIN_WAIT_MS = 300;

const isMultipart = (request: FastifyRequest) => /^multipart\//i.test(request.headers['content-type'] ?? '');

/** Whether a route answers the public (its operation says `security: []`, or only empty requirements). */
function isPublic(security: unknown): boolean {
  return Array.isArray(security) && security.every((requirement) => typeof requirement === 'object' && requirement && Object.keys(requirement).length === 0);
}

/** Whether a route, as registered, honours the header: an authenticated POST or PATCH that takes JSON (not only uploads). */
function honours(route: RouteOptions): boolean {
  const methods = Array.isArray(route.method) ? route.method : [route.method];
  if (!methods.some((method) => method === 'POST' || method === 'PATCH')) return false;
  if (route.config?.idempotencyKey === false) return false;
  const schema = route.schema as { security?: unknown; consumes?: unknown; hide?: boolean } | undefined;
  if (schema?.hide || isPublic(schema?.security)) return false;
  const consumes = Array.isArray(schema?.consumes) ? (schema.consumes as string[]) : undefined;
  return !consumes || consumes.some((type) => !/^multipart\//i.test(type));
}

function hookList<T>(hooks: T | T[] | undefined): T[] {
  if (hooks === undefined) return [];
  return Array.isArray(hooks) ? hooks : [hooks];
}

const sha256 = (data: string) => createHash('sha256').update(data).digest('base64url');

/**
 * `Idempotency-Key` on every authenticated POST and PATCH (DESIGN.md §10), registered before the
 * routes:
 * - a route that honours the header gets hooks of its own: after its own, a preParsing hook
 *   that hashes the body as the parser reads it (after the route's own decompression), only when
 *   the header is sent; and a last preHandler, so authentication, role checks and validation have
 *   all run (answers given before the work are never remembered), that claims the key or answers;
 * - and an onSend hook, first of the route's own, that keeps the answer of a claim (2xx, and the
 *   409 and 422 the work raised) or releases the claim (any other answer), before the answer
 *   leaves: a retry arriving once the client has it finds it kept.
 * The key's scope is the caller, the method and the path as sent; its fingerprint, the body bytes
 * and the query string.
 */
export const idempotencyPlugin = fp<IdempotencyOptions>(
  async (app: FastifyInstance, options) => {
    const ttlSeconds = options.ttlHours * 3600;
    const staleSeconds = options.staleSeconds ?? STALE_CLAIM_SECONDS;
    const bodies = new WeakMap<FastifyRequest, Hash>();
    const claims = new WeakMap<FastifyRequest, ClaimedWork>();

    // Only when the header is sent: a request without it pays one header lookup.
    const hashBody: preParsingHookHandler = (request, _reply, payload, done) => {
      if (request.headers['idempotency-key'] === undefined || isMultipart(request)) return done(null, payload);
      const hash = createHash('sha256');
      bodies.set(request, hash);
      // The chunks are hashed as the stream hands them to its reader, by listening to its own
      // 'data' events (a Readable emits one for every chunk it gives, flowing or read()), rather
      // than through a stream piped in between: that extra stream cost a tenth of the log
      // tracker's batch ingest throughput at 1 000-entry batches (bench `BENCH_ONLY=idempotency`).
      const emit = payload.emit;
      payload.emit = function (this: typeof payload, event: string | symbol, ...args: unknown[]) {
        if (event === 'data') hash.update(args[0] as Buffer | string);
        return emit.call(this, event, ...args);
      } as typeof payload.emit;
      done(null, payload);
    };

    const claimKey: preHandlerAsyncHookHandler = async function (request: FastifyRequest, reply: FastifyReply) {
      const key = request.headers['idempotency-key'];
      if (key === undefined || isMultipart(request)) return;
      const scope = options.scope(request);
      if (scope === undefined) return;
      if (typeof key !== 'string' || !KEY.test(key)) {
        throw AppError.validation({ idempotency_key: ['Must be 1 to 255 visible ASCII characters (0x21 to 0x7E)'] });
      }
      const mark = request.url.indexOf('?');
      const path = mark === -1 ? request.url : request.url.slice(0, mark);
      const query = mark === -1 ? '' : request.url.slice(mark + 1);
      const id = sha256(`${scope}\0${request.method}\0${path}\0${key}`);
      // The body's digest is of fixed length: body and query cannot be told apart otherwise.
      const body = bodies.get(request)?.digest() ?? Buffer.alloc(0);
      const fingerprint = createHash('sha256').update(body).update(query).digest('base64url');
      const owner = randomUUID();
      let claim: IdempotencyClaim;
      try {
        claim = await options.store.claim({ id, fingerprint, owner, ttlSeconds, staleSeconds });
      } catch (error) {
        // The claim may have been committed all the same (the connection lost with its answer): it
        // is released once the database is back, or the key would answer 409 until stale. Releasing
        // is by owner, unique to this request, so a claim it never took is left alone.
        recordLater(() => options.store.release(id, owner), request, SETTLE_RETRIES);
        throw error;
      }
      if (claim.state === 'claimed') {
        claims.set(request, { id, owner, commits: 0, uncertain: false });
        return;
      }
      if (claim.state === 'running') {
        const message = claim.done
          ? 'The request with this Idempotency-Key was done and its answer is being recorded; retry later'
          : 'A request with this Idempotency-Key is still being handled; retry later';
        throw new AppError('conflict', message, { headers: { 'retry-after': '1' } });
      }
      await options.beforeReplay?.(request);
      if (claim.fingerprint !== fingerprint) {
        throw AppError.validation({ idempotency_key: ['This key was reused with a different request'] });
      }
      const { answer } = claim;
      reply.code(answer.status).header(REPLAYED_HEADER, 'true');
      if (answer.contentType) reply.type(answer.contentType);
      if (answer.location) reply.header('location', answer.location);
      return reply.send(answer.body);
    };

    app.addHook('onRoute', (route) => {
      if (!honours(route)) return;
      route.config = { ...route.config, idempotencyKey: true };
      route.preParsing = [...hookList(route.preParsing), hashBody];
      route.preHandler = [...hookList(route.preHandler), claimKey];
      route.onSend = [recordAnswer, ...hookList(route.onSend)];
      const runWork = options.store.runWork;
      if (runWork) {
        // The handler runs as the claim's work: the transactions it commits count on the claim.
        const handler = route.handler;
        route.handler = function (this: FastifyInstance, request: FastifyRequest, reply: FastifyReply) {
          const work = claims.get(request);
          return work ? runWork(work, () => handler.call(this, request, reply)) : handler.call(this, request, reply);
        } as typeof route.handler;
      }
    });

    /** Keeps the answer of a claim, or releases the claim; then lets the answer go. */
    async function settle(request: FastifyRequest, reply: FastifyReply, payload: unknown, claim: ClaimedWork) {
      const status = reply.statusCode;
      // Every answer given before the work (400, 401, 403, 404 of access, 413, schema 422, 429)
      // came before the claim; what comes after it is the work's. Of that, a 404 of access, 503 and
      // every 5xx are not kept: a retry does the work.
      const kept = (status >= 200 && status < 300) || status === 409 || status === 422;
      const body = typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : payload == null ? '' : undefined;
      const contentType = reply.getHeader('content-type');
      const location = reply.getHeader('location');
      const answer: RememberedAnswer | null =
        kept && body !== undefined
          ? { status, contentType: typeof contentType === 'string' ? contentType : null, location: typeof location === 'string' ? location : null, body }
          : null;
      if (claim.uncertain && options.store.settleUncertain) return settleUncertain(request, reply, claim, answer);
      const record = async () => {
        if (answer) await options.store.complete(claim.id, claim.owner, answer, ttlSeconds);
        else await options.store.release(claim.id, claim.owner);
      };
      try {
        await record();
      } catch (error) {
        // The answer goes out all the same. The database is often away for a moment only (a
        // failover): recorded or released in the background once it is back, a retry of the key
        // gets the answer, or does the work, within seconds rather than 409 until the claim is stale.
        request.log.warn({ err: error }, 'idempotency key: the answer was not recorded');
        recordLater(record, request, SETTLE_RETRIES);
      }
    }

    /**
     * The answer of a work that lost the answer to a commit (a failover): it goes out only if that
     * commit happened, which the claim's row tells once the database answers again. Until then the
     * client gets 503 and a retry 409, both with Retry-After; settled in the background, the key
     * then replays the answer, or does the work again if the commit did not happen.
     */
    async function settleUncertain(request: FastifyRequest, reply: FastifyReply, claim: ClaimedWork, answer: RememberedAnswer | null) {
      const settleIt = () => options.store.settleUncertain!(claim.id, claim.owner, claim.commits, answer, ttlSeconds);
      const later = (error: unknown) => {
        request.log.warn({ err: error }, 'idempotency key: the answer to a commit was lost; settled once the database is back');
        recordLater(() => settleIt().then(() => undefined), request, SETTLE_RETRIES);
      };
      // Asked at once, but not waited for long: with the database away, acquiring a connection
      // alone could take seconds. An attempt still running after that settles the key on its own
      // (the answer then goes out as 503, and the retry finds the key settled), or fails and
      // leaves it to the background.
      const attempt = settleIt();
      let timer: NodeJS.Timeout | undefined;
      const outcome = await Promise.race([
        attempt.then((kept) => ({ kept }), (error: unknown) => ({ error })),
        new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), UNCERTAIN_WAIT_MS))),
      ]);
      clearTimeout(timer);
      let stored = false;
      if (outcome === undefined) attempt.catch(later);
      else if ('error' in outcome) later(outcome.error);
      else stored = outcome.kept;
      // An error answer goes as it is; a success only if what it says was stored.
      if (stored || !answer) return;
      reply.removeHeader('location');
      throw new AppError('service_unavailable', 'The service is temporarily unavailable; retry after the Retry-After delay', {
        headers: { 'retry-after': '1' },
      });
    }

    function recordLater(record: () => Promise<void>, request: FastifyRequest, left: number) {
      if (left <= 0) return;
      setTimeout(() => {
        record().then(
          () => request.log.info('idempotency key: settled after a retry'),
          () => recordLater(record, request, left - 1),
        );
      }, SETTLE_RETRY_MS).unref();
    }

    // A hook of the honouring routes only, first of their own onSend hooks (before one that changes
    // the answer's encoding, as OTLP's protobuf does): other routes, reads among them, pay nothing.
    const recordAnswer: onSendHookHandler = (request, reply, payload, done) => {
      const claim = claims.get(request);
      if (!claim) return done(null, payload);
      claims.delete(request);
      // What the handler left running from here on is not the claim's work (ClaimedWork.settled).
      claim.settled = true;
      settle(request, reply, payload, claim).then(
        () => done(null, payload),
        (error: Error) => done(error),
      );
    };

    const intervalMs = options.purgeIntervalMs ?? PURGE_INTERVAL_MS;
    if (intervalMs > 0) {
      let purging: Promise<unknown> = Promise.resolve();
      const purge = () =>
        app.hasDecorator('metrics') ? app.metrics.job('idempotency_keys_purge', () => options.store.purgeExpired()) : options.store.purgeExpired();
      const timer = setInterval(() => {
        purging = purge().catch((error: unknown) => app.log.warn({ err: error }, 'idempotency keys: purging expired ones failed'));
      }, intervalMs);
      timer.unref();
      // preClose: the app's onClose hooks close the database, and a purge in flight finishes first.
      app.addHook('preClose', async () => {
        clearInterval(timer);
        await purging;
      });
    }
  },
  { name: 'idempotency-key', dependencies: ['error-handler'] },
);
