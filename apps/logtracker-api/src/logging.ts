import type { IncomingHttpHeaders } from 'node:http';
import type { ServerOptions } from '@repo/http';

/** Query parameters that carry credentials (the live tail's `access_token`): never logged. */
const SECRET_QUERY_PARAMS = new Set(['access_token']);
const REDACTED = '[REDACTED]';

function decodeKey(key: string): string {
  try {
    return decodeURIComponent(key.replace(/\+/g, ' '));
  } catch {
    return key;
  }
}

/**
 * The URL with the values of credential-bearing query parameters replaced. Keys are compared
 * decoded, as the query parser reads them: `access%5Ftoken=…` is the same parameter.
 */
export function redactQueryTokens(url: string): string {
  const start = url.indexOf('?');
  if (start === -1) return url;
  const pairs = url
    .slice(start + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const key = eq === -1 ? pair : pair.slice(0, eq);
      return SECRET_QUERY_PARAMS.has(decodeKey(key).toLowerCase()) ? `${key}=${REDACTED}` : pair;
    });
  return `${url.slice(0, start)}?${pairs.join('&')}`;
}

const redactString = (value: unknown) => (typeof value === 'string' ? redactQueryTokens(value) : value);

/** What the serializer reads of a request (Fastify's request, or a raw one). */
interface LoggedRequest {
  method?: string;
  url?: string;
  headers: IncomingHttpHeaders;
  host?: string;
  ip?: string;
  socket?: { remotePort?: number };
}

/** Fastify's own request serializer, with the URL's credentials redacted. */
function serializeRequest(req: LoggedRequest) {
  const version = req.headers['accept-version'];
  return {
    method: req.method,
    url: req.url === undefined ? undefined : redactQueryTokens(req.url),
    version: typeof version === 'string' ? version : undefined,
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket?.remotePort,
  };
}

/**
 * The app's logger options: the caller's (tests pass a destination stream), or @repo/http's
 * defaults, plus serializers that keep query-string tokens out of every line. The live tail takes
 * its bearer token in the URL (browsers cannot set headers on a WebSocket), and pino logs the URL
 * of each request (`req`); @fastify/websocket logs it as `path` when an upgrade reaches a route
 * with no WebSocket handler; `url` covers anything else that logs one.
 */
export function loggerOptions(logLevel: string, override: ServerOptions['logger']): ServerOptions['logger'] {
  if (override === false) return false;
  const base =
    typeof override === 'object'
      ? override
      : // @repo/http's default when no logger is given.
        { level: logLevel, redact: { paths: ['req.headers.authorization', 'req.headers.cookie', 'req.headers["x-ingest-key"]'], remove: true } };
  return {
    ...base,
    serializers: { ...base.serializers, req: serializeRequest, path: redactString, url: redactString },
  };
}
