import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from './errors.js';

/** How long a connection closed on an unread body keeps reading it, so the client reads the answer. */
const LINGER_MS = 10_000;

const continued = new WeakSet<FastifyRequest['raw']>();

function expectsContinue(request: FastifyRequest): boolean {
  const expect = request.headers.expect;
  return typeof expect === 'string' && expect.toLowerCase() === '100-continue';
}

function isMultipart(request: FastifyRequest): boolean {
  // Uploads are bounded by the multipart reader's own file limits, not by the JSON body limit.
  return /^multipart\//i.test(request.headers['content-type'] ?? '');
}

/**
 * Closes a connection after its answer without cutting off a client still sending: the write side
 * is shut (the client sees the end of the answer) and whatever the client still sends is read and
 * discarded, until it closes or LINGER_MS pass. Destroying the socket at once, as Node does, makes
 * the kernel reset the connection while the client is sending, and a client that is still
 * sending (curl with a large body) reports a send failure and never reads the 413.
 */
function lingerOnClose(socket: Socket) {
  socket.destroySoon = function lingeringDestroySoon(this: Socket) {
    this.end();
    this.resume();
    const timer = setTimeout(() => this.destroy(), LINGER_MS);
    timer.unref();
    this.once('close', () => clearTimeout(timer));
  };
}

/** How deep a request body may nest objects and arrays (`{}` is one level): deeper ones answer 400. */
export const MAX_BODY_DEPTH = 64;

function isPlainObject(value: object): boolean {
  const prototype = Object.getPrototypeOf(value) as object | null;
  return prototype === Object.prototype || prototype === null;
}

/**
 * Whether a parsed body nests objects and arrays more than `limit` levels deep. Recursive code
 * further on (a schema's JSON.stringify, jsonb's parser) overflows its stack on a few thousand
 * levels, a 500, where JSON.parse itself takes them; this walk keeps its own stack, so no nesting
 * can overflow it. It visits the containers only, and stops at the first one too deep. A body a
 * route keeps as something else than JSON (a Buffer, an object of its own) is not entered.
 */
export function nestsDeeperThan(body: unknown, limit: number): boolean {
  if (typeof body !== 'object' || body === null) return false;
  const containers: object[] = [body];
  const depths: number[] = [1];
  for (let container = containers.pop(); container !== undefined; container = containers.pop()) {
    const depth = depths.pop() as number;
    if (Array.isArray(container)) {
      for (let i = 0; i < container.length; i++) {
        const inner: unknown = container[i];
        if (typeof inner !== 'object' || inner === null) continue;
        if (depth >= limit) return true;
        containers.push(inner);
        depths.push(depth + 1);
      }
    } else if (isPlainObject(container)) {
      for (const key in container) {
        const inner = (container as Record<string, unknown>)[key];
        if (typeof inner !== 'object' || inner === null) continue;
        if (depth >= limit) return true;
        containers.push(inner);
        depths.push(depth + 1);
      }
    }
  }
  return false;
}

/**
 * Answers for bodies that will not be read:
 * - A body whose `Content-Length` is over the route's limit is refused with 413 before a byte of
 *   it is read.
 * - `Expect: 100-continue` is answered only once the request has passed every check before its
 *   body is parsed (limits, authentication, rate limits); a request refused before then gets its
 *   final answer instead, and the client need not send the body at all. (Node answers 100 as soon
 *   as the headers arrive, unless the server handles `checkContinue` itself.)
 * - A response sent while the body is still unread closes the connection (the next request could
 *   not be told from the rest of the body), after letting the client finish sending.
 *
 * And for a body parsed but nested deeper than MAX_BODY_DEPTH: 400, before any route validates or
 * reads it, whichever parser made it (JSON, a route's own).
 */
export function registerBodyGuards(app: FastifyInstance) {
  app.server.on('checkContinue', (req, res) => app.server.emit('request', req, res));

  // Hooks of every request, written with `done` (no promise, no microtask each).
  app.addHook('onRequest', (request, _reply, done) => {
    const declared = request.headers['content-length'];
    if (declared === undefined || isMultipart(request)) return done();
    const length = Number(declared);
    if (Number.isFinite(length) && length > request.routeOptions.bodyLimit) {
      return done(new AppError('payload_too_large', `The request body is too large (at most ${request.routeOptions.bodyLimit} bytes)`));
    }
    done();
  });

  app.addHook('preParsing', (request, reply, payload, done) => {
    if (expectsContinue(request) && !continued.has(request.raw)) {
      continued.add(request.raw);
      reply.raw.writeContinue();
    }
    done(null, payload);
  });

  app.addHook('preValidation', (request, _reply, done) => {
    if (nestsDeeperThan(request.body, MAX_BODY_DEPTH)) {
      return done(new AppError('bad_request', `JSON nesting deeper than ${MAX_BODY_DEPTH} levels`));
    }
    done();
  });

  app.addHook('onSend', (request, reply, payload, done) => {
    // Answered before the whole body arrived (refused, or answered without reading it).
    if (hasBody(request) && !request.raw.complete) {
      reply.header('connection', 'close');
      lingerOnClose(request.raw.socket);
    }
    done(null, payload);
  });
}

/** Whether the request declares a body (an upgrade or a bodiless GET is never "unread"). */
function hasBody(request: FastifyRequest): boolean {
  const length = request.headers['content-length'];
  return (length !== undefined && length !== '0') || request.headers['transfer-encoding'] !== undefined;
}
