import fc from 'fast-check';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { afterAll, describe, expect, it } from 'vitest';
import { hostileRequest } from './arbitraries.js';
import { encodeUrlText } from './encoding.js';
import { allowsAnonymous, fillPath, readOperations, unresolvedRefs, type OpenApiDocument, type SuiteOperation } from './openapi.js';
import { sampleValid } from './sample.js';
import { readSettings, type SuiteSettings } from './settings.js';
import { forgedTokens } from './tokens.js';
import { describeExchange, envelopeProblems, hostileProblems, type ErrorTable, type Exchange } from './verdict.js';

/** What the suite needs of an app: Fastify's `inject` and the OpenAPI document of @fastify/swagger. */
export interface SuiteApp {
  inject(options: InjectOptions): Promise<LightMyRequestResponse>;
  swagger(): unknown;
}

/** Who sends a request, and the fixtures it may name. */
export interface Caller {
  /** Credentials: `authorization: Bearer …`, or an API-key header. */
  headers?: Record<string, string>;
  /** Values (not URL-encoded) for path parameters, by name: resources made for this operation. */
  params?: Record<string, string>;
}

export interface RouteSuiteOptions {
  /** Names the suite in the test output. */
  name: string;
  app: SuiteApp;
  /** The key the app signs its tokens with: the suite signs an expired token with it. */
  jwtSecret: string;
  /**
   * Operations that take no token whatever the document says. Operations declaring `security: []`
   * (or an empty requirement `{}`) are public anyway; this list is the fallback for a document
   * that does not mark them yet. Every operation must either declare security or be listed here.
   */
  publicOperations?: readonly string[];
  /** Operations an ordinary user must be refused with 403 (admin-only, owners-only). */
  privileged?: (op: SuiteOperation) => boolean;
  /**
   * An ordinary user (no privilege) with a fresh session, and for a privileged operation the
   * fixtures that user can reach but not administer. Called once per test.
   */
  ordinary: (op: SuiteOperation) => Promise<Caller>;
  /**
   * Who sends the hostile requests to an operation, with fresh fixtures for it (so a DELETE that
   * succeeds harms nothing another test uses). The ordinary user by default.
   */
  caller?: (op: SuiteOperation) => Promise<Caller>;
  /** The app's error table (`errorStatus` of packages/http): envelopes must use its codes, each with its status. */
  errorTable?: ErrorTable;
  /** Closes the app after the suite. */
  close?: () => Promise<void>;
  /** Defaults to the ROUTE_SUITE_* environment variables. */
  settings?: SuiteSettings;
  /** Per-test timeout in milliseconds (a hostile-input test runs ROUTE_SUITE_RUNS requests). */
  timeoutMs?: number;
}

interface Request {
  method: string;
  url: string;
  headers: Record<string, string>;
  payload?: string | Buffer;
}

async function send(app: SuiteApp, request: Request): Promise<Exchange> {
  const response = await app.inject({
    method: request.method as InjectOptions['method'],
    url: request.url,
    headers: request.headers,
    ...(request.payload === undefined ? {} : { payload: request.payload }),
  });
  return { ...request, status: response.statusCode, responseHeaders: response.headers, body: response.body };
}

/** FNV-1a: a stable 32-bit seed per operation from the base seed, so each replays on its own. */
function operationSeed(base: number, id: string): number {
  let hash = 0x811c9dc5;
  for (const char of `${base}:${id}`) {
    hash ^= char.codePointAt(0)!;
    hash = Math.imul(hash, 0x01000193);
  }
  return hash | 0;
}

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

/** Path values for a request the router must match: the caller's fixtures, else `0` (a row no table has). */
function routableParams(op: SuiteOperation, caller: Caller): Record<string, string> {
  return Object.fromEntries(op.pathParams.map((p) => [p.name, encodeUrlText(caller.params?.[p.name] ?? '0')]));
}

function fail(title: string, problems: string[]): never {
  throw new Error(`${title}\n${problems.join('\n\n')}`);
}

/**
 * Generates the security suite of an app from its OpenAPI document: authentication (401) and
 * authorisation (403) for every operation that needs them, malformed and fast-check generated
 * hostile requests for every operation, and routing checks (414 for long path parameters, 404/405
 * for an unsupported method). A route added later is covered without a test being written for it.
 */
export function defineRouteSuite(options: RouteSuiteOptions) {
  const settings = options.settings ?? readSettings(process.env);
  const doc = options.app.swagger() as OpenApiDocument;
  const operations = readOperations(doc);
  const publicIds = new Set(options.publicOperations ?? []);
  const isPublic = (op: SuiteOperation) => publicIds.has(op.id) || allowsAnonymous(op.security);
  const timeout = options.timeoutMs ?? 120_000;
  const label = (op: SuiteOperation) => `${op.id} · ${op.method} ${op.path}`;
  const reproduce = (op: SuiteOperation, extra = '') =>
    `reproduce: ROUTE_SUITE_SEED=${settings.seed}${extra} pnpm vitest run test/route-suite.test.ts -t '${op.id} '`;
  const apiKeyHeaders = Object.entries(doc.components?.securitySchemes ?? {})
    .filter(([, scheme]) => scheme.type === 'apiKey' && scheme.in === 'header' && scheme.name)
    .map(([name, scheme]) => ({ scheme: name, header: scheme.name!.toLowerCase() }));

  describe(options.name, () => {
    afterAll(async () => {
      await options.close?.();
    });

    describe('document', () => {
      it('resolves every $ref', () => {
        const missing = unresolvedRefs(doc);
        expect(missing.map((m) => `${m.ref} at ${m.at}`), 'refs to components the document does not define').toEqual([]);
      });

      it('identifies every operation, which declares security or is listed as public', () => {
        const problems: string[] = [];
        const ids = new Set(operations.map((op) => op.id));
        for (const op of operations) {
          if (op.id.includes(' ')) problems.push(`${op.method} ${op.path} has no operationId`);
          if (op.security === undefined && !publicIds.has(op.id)) {
            problems.push(`${op.id} declares no security and is not listed as public: declare security: [] or [{ bearerAuth: [] }]`);
          }
        }
        for (const id of publicIds) if (!ids.has(id)) problems.push(`${id} is listed as public but the document has no such operation`);
        expect(problems).toEqual([]);
      });
    });

    describe('authentication: 401 without valid credentials', () => {
      for (const op of operations.filter((o) => !isPublic(o))) {
        it(label(op), async () => {
          const caller = await options.ordinary(op);
          const credentials = new Set(['authorization', ...apiKeyHeaders.map((k) => k.header)]);
          const bare = Object.fromEntries(Object.entries(caller.headers ?? {}).filter(([k]) => !credentials.has(k.toLowerCase())));
          const valid = /^Bearer\s+(\S+)$/i.exec(caller.headers?.authorization ?? '')?.[1] ?? '';
          const body = op.body?.schema ? JSON.stringify(sampleValid(doc, op.body.schema)) : undefined;
          const base: Request = {
            method: op.method,
            url: fillPath(op.path, routableParams(op, caller)),
            headers: body === undefined ? bare : { ...bare, 'content-type': 'application/json' },
            payload: body,
          };
          const variants: { name: string; headers: Record<string, string> }[] = [
            { name: 'no credentials', headers: base.headers },
            ...forgedTokens(valid, options.jwtSecret).map((f) => ({
              name: `bearer token ${f.name}`,
              headers: { ...base.headers, authorization: `Bearer ${f.token}` },
            })),
          ];
          const schemes = new Set((op.security ?? []).flatMap((requirement) => Object.keys(requirement)));
          for (const key of apiKeyHeaders.filter((k) => schemes.has(k.scheme))) {
            variants.push({ name: `forged ${key.header}`, headers: { ...base.headers, [key.header]: 'forged-route-suite-key' } });
          }
          const problems: string[] = [];
          for (const variant of variants) {
            const exchange = await send(options.app, { ...base, headers: variant.headers });
            const wrong = [...(exchange.status === 401 ? [] : [`expected 401, got ${exchange.status}`]), ...envelopeProblems(exchange, options.errorTable)];
            if (wrong.length) problems.push(`${variant.name}: ${wrong.join('; ')}\n${describeExchange(exchange)}`);
          }
          if (problems.length) fail(`${label(op)} lets a request without valid credentials through`, problems);
        }, timeout);
      }
    });

    const privileged = operations.filter((op) => options.privileged?.(op) && !isPublic(op));
    describe('authorisation: 403 for an ordinary user on privileged operations', () => {
      it('finds privileged operations to check', () => {
        expect(options.privileged === undefined || privileged.length > 0, 'the privileged predicate matches no operation').toBe(true);
      });
      for (const op of privileged) {
        it(label(op), async () => {
          const caller = await options.ordinary(op);
          const body = op.body?.schema ? JSON.stringify(sampleValid(doc, op.body.schema)) : undefined;
          const exchange = await send(options.app, {
            method: op.method,
            url: fillPath(op.path, routableParams(op, caller)),
            headers: { ...caller.headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
            payload: body,
          });
          const problems = [...(exchange.status === 403 ? [] : [`expected 403, got ${exchange.status}`]), ...envelopeProblems(exchange, options.errorTable)];
          if (problems.length) fail(`${label(op)} does not refuse an ordinary user`, [`${problems.join('; ')}\n${describeExchange(exchange)}`]);
        }, timeout);
      }
    });

    describe('malformed requests: wrong content types, broken JSON, oversize bodies', () => {
      for (const op of operations.filter((o) => BODY_METHODS.has(o.method) || o.body)) {
        it(label(op), async () => {
          const caller = await (options.caller ?? options.ordinary)(op);
          const declaresBody = op.body !== undefined;
          const cases: { name: string; type: string; payload: string | Buffer; mustFail: boolean }[] = [
            { name: 'malformed JSON', type: 'application/json', payload: '{"a":', mustFail: true },
            { name: 'JSON with a trailing comma', type: 'application/json', payload: '{"a":1,}', mustFail: true },
            { name: 'empty JSON body', type: 'application/json', payload: '', mustFail: op.body?.required ?? false },
            { name: 'text/plain', type: 'text/plain', payload: 'hello', mustFail: true },
            { name: 'application/xml', type: 'application/xml', payload: '<a>1</a>', mustFail: true },
            { name: 'form-urlencoded', type: 'application/x-www-form-urlencoded', payload: 'a=1&b=2', mustFail: declaresBody },
            { name: 'multipart without a boundary', type: 'multipart/form-data', payload: 'hello', mustFail: declaresBody },
            { name: 'multipart with a boundary but no parts', type: 'multipart/form-data; boundary=x', payload: '--x--\r\n', mustFail: declaresBody },
            { name: 'JSON in invalid UTF-8', type: 'application/json', payload: Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]), mustFail: false },
            { name: 'JSON with a lone surrogate and NUL', type: 'application/json', payload: '{"a":"\\ud800\\u0000"}', mustFail: false },
            { name: 'prototype pollution', type: 'application/json', payload: '{"__proto__":{"isAdmin":true}}', mustFail: false },
            { name: 'deeply nested arrays', type: 'application/json', payload: `${'['.repeat(100_000)}${']'.repeat(100_000)}`, mustFail: declaresBody },
            // Over the default body limit; a route with a larger limit of its own may accept it.
            { name: 'a 2 MiB body', type: 'application/json', payload: JSON.stringify({ a: 'x'.repeat(2 * 1024 * 1024) }), mustFail: false },
          ];
          const problems: string[] = [];
          for (const c of cases) {
            const exchange = await send(options.app, {
              method: op.method,
              url: fillPath(op.path, routableParams(op, caller)),
              headers: { ...caller.headers, 'content-type': c.type },
              payload: c.payload,
            });
            const wrong = hostileProblems(op, exchange, options.errorTable);
            if (c.mustFail && exchange.status < 300) wrong.push(`accepted (${exchange.status})`);
            if (wrong.length) problems.push(`${c.name}: ${wrong.join('; ')}\n${describeExchange(exchange)}`);
          }
          if (problems.length) fail(`${label(op)} mishandles malformed requests`, problems);
        }, timeout);
      }
    });

    describe(`hostile input: ${settings.runs} generated requests per operation (seed ${settings.seed})`, () => {
      for (const op of operations) {
        it(label(op), async () => {
          const caller = await (options.caller ?? options.ordinary)(op);
          const seed = operationSeed(settings.seed, op.id);
          // Every run is sent and judged; failures are told apart by what went wrong, so one run
          // shows each distinct problem of the operation, each with the run that replays it.
          const failures = new Map<string, { run: number; report: string }>();
          let run = settings.path === undefined ? 0 : Number(settings.path);
          const first = run;
          const property = fc.asyncProperty(hostileRequest(doc, op, caller.params), async (parts) => {
            const thisRun = run++;
            const headers: Record<string, string> = { ...caller.headers };
            if (parts.body !== undefined) headers['content-type'] = 'application/json';
            const request: Request = {
              method: op.method,
              url: `${fillPath(op.path, parts.params)}${parts.query ? `?${parts.query}` : ''}`,
              headers,
              payload: parts.body,
            };
            let problems: string[];
            let report: string;
            try {
              const exchange = await send(options.app, request);
              problems = hostileProblems(op, exchange, options.errorTable);
              report = describeExchange(exchange);
            } catch (error) {
              problems = [`inject failed: ${(error as Error).message}`];
              report = `  request:  ${request.method} ${request.url}`;
            }
            if (problems.length === 0) return;
            const kind = problems.join('; ');
            const signature = kind.replace(/"[^"]*"/g, '"…"');
            if (!failures.has(signature)) failures.set(signature, { run: thisRun, report: `${kind}\n${report}` });
          });
          await fc.assert(property, {
            seed,
            numRuns: settings.path === undefined ? settings.runs : 1,
            ...(settings.path === undefined ? {} : { path: settings.path }),
          });
          if (failures.size > 0) {
            fail(
              `${label(op)} mishandles hostile input: ${failures.size} distinct problem(s) in ${run - first} run(s) (fast-check seed ${seed})`,
              [...failures.values()].map(
                (f) => `run ${f.run}: ${f.report}\n${reproduce(op, ` ROUTE_SUITE_PATH=${f.run}`)}`,
              ),
            );
          }
        }, timeout);
      }
    });

    describe('routing: 414 for a path parameter over 100 characters, 404/405 for an unsupported method', () => {
      const seenPaths = new Set<string>();
      for (const op of operations) {
        const params = op.pathParams.filter((p) => !p.restOfPath);
        if (params.length === 0 || seenPaths.has(op.path)) continue;
        seenPaths.add(op.path);
        it(`414 · ${op.method} ${op.path}`, async () => {
          const problems: string[] = [];
          for (const long of params) {
            const values = Object.fromEntries(op.pathParams.map((p) => [p.name, p.name === long.name ? '1'.repeat(101) : '0']));
            const exchange = await send(options.app, { method: op.method, url: fillPath(op.path, values), headers: {} });
            const wrong = [...(exchange.status === 414 ? [] : [`expected 414, got ${exchange.status}`]), ...envelopeProblems(exchange, options.errorTable)];
            if (wrong.length) problems.push(`${long.name} of 101 characters: ${wrong.join('; ')}\n${describeExchange(exchange)}`);
          }
          if (problems.length) fail(`${op.method} ${op.path} mishandles a long path parameter`, problems);
        }, timeout);
      }

      const methodsByPath = new Map<string, SuiteOperation[]>();
      for (const op of operations) methodsByPath.set(op.path, [...(methodsByPath.get(op.path) ?? []), op]);
      const matches = (template: string, url: string) =>
        new RegExp(`^${template.replace(/[.+?^$()|[\]\\]/g, '\\$&').replace(/\{\*\}/g, '.*').replace(/\{[^}]+\}/g, '[^/]+')}$`).test(url);
      for (const [path, ops] of methodsByPath) {
        const url = fillPath(path, Object.fromEntries(ops[0]!.pathParams.map((p) => [p.name, '0'])));
        // A method no operation answers at this URL, not even one whose template also matches it
        // (DELETE /vehicles/lookup is DELETE /vehicles/{vehicle}); and OPTIONS that is not a CORS
        // preflight (no Origin), which the CORS plugin would otherwise answer in plain text.
        const missing = ['DELETE', 'PATCH', 'PUT', 'POST', 'GET'].find(
          (m) => !operations.some((o) => o.method === m && (o.path === path || matches(o.path, url))),
        );
        const methods = [...(missing ? [missing] : []), ...(ops.some((o) => o.method === 'OPTIONS') ? [] : ['OPTIONS'])];
        if (methods.length === 0) continue;
        it(`${methods.join(', ')} · ${path}`, async () => {
          const problems: string[] = [];
          for (const method of methods) {
            const exchange = await send(options.app, { method, url, headers: {} });
            const wrong = [...([404, 405].includes(exchange.status) ? [] : [`expected 404 or 405, got ${exchange.status}`]), ...envelopeProblems(exchange, options.errorTable)];
            if (wrong.length) problems.push(`${method}: ${wrong.join('; ')}\n${describeExchange(exchange)}`);
          }
          if (problems.length) fail(`${path} answers a method it does not have outside 404/405 and the envelope`, problems);
        }, timeout);
      }
    });
  });
}
