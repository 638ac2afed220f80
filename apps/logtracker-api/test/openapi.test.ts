import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  exampleUrl,
  operationsOf,
  requiresCredentials,
  typeCheck,
  documentProblems,
  writeClientTypes,
  type DocumentedOperation,
} from '@repo/http/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from './helpers.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const clientDir = path.join(here, 'client');

/** Warnings of redocly's recommended rules the document keeps, each for a reason. */
const KNOWN_WARNINGS = [
  // The project publishes no licence.
  'info-license #/info',
  // The live tail answers 101 Switching Protocols; only its failures are plain HTTP answers.
  'operation-2xx-response #/paths/~1api~1projects~1{project_id}~1logs~1tail/get/responses',
];

const PUBLIC_OPERATIONS = ['health', 'healthLive', 'healthReady', 'login', 'register'];
const WRITER_SECURITY: Record<string, string[]>[] = [{ bearerAuth: [] }, { ingestKey: [] }];
const INGEST_KEY_SECURITY: Record<string, Record<string, string[]>[]> = {
  createLog: WRITER_SECURITY,
  createLogBatch: WRITER_SECURITY,
  otlpExportLogs: [{ ingestKey: [] }],
};

let t: TestApp;
let document: { tags?: { name: string }[]; servers?: { url: string }[]; security?: unknown } & object;
let operations: DocumentedOperation[];
beforeAll(async () => {
  t = await buildTestApp();
  document = t.app.swagger() as typeof document;
  operations = operationsOf(document);
});
afterAll(() => t.close());

describe('OpenAPI document', () => {
  it('is served at /docs/json as the app builds it', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/docs/json' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual(JSON.parse(JSON.stringify(document)));
    expect(operations.length).toBeGreaterThan(20);
  });

  it('passes swagger-parser and redocly (only the known warnings), every operation named, summarised, tagged and described', async () => {
    expect(await documentProblems(document, KNOWN_WARNINGS)).toEqual([]);
  });

  it('states the security of every operation: none for the public ones, the ingest key where it is taken', () => {
    expect(document.security).toEqual([{ bearerAuth: [] }]);
    for (const op of operations) {
      const id = op.operationId!;
      const expected = PUBLIC_OPERATIONS.includes(id) ? [] : (INGEST_KEY_SECURITY[id] ?? [{ bearerAuth: [] }]);
      expect(op.security, `${id} states its security`).toEqual(expected);
    }
  });

  it('matches what the routes do: without credentials, exactly the operations that require them answer 401', async () => {
    const mismatches: string[] = [];
    for (const op of operations) {
      const res = await t.app.inject({ method: op.method.toUpperCase() as 'GET', url: exampleUrl(op) });
      const secured = requiresCredentials(op, document);
      if ((res.statusCode === 401) !== secured) mismatches.push(`${op.operationId}: ${res.statusCode}, documented ${secured ? 'secured' : 'public'}`);
    }
    expect(mismatches).toEqual([]);
  });

  it('lists Idempotency-Key on every authenticated POST and PATCH (ingest routes and OTLP included), and on no other operation', () => {
    const listed = (op: DocumentedOperation) => (op.parameters ?? []).find((p) => p.in === 'header' && p.name === 'Idempotency-Key');
    const honours = (op: DocumentedOperation) => (op.method === 'post' || op.method === 'patch') && (op.security?.length ?? 1) > 0;
    const wrong = operations.filter((op) => Boolean(listed(op)) !== honours(op)).map((op) => `${op.method} ${op.path}`);
    expect(wrong).toEqual([]);
    for (const id of ['createLogBatch', 'createLog', 'otlpExportLogs']) {
      expect(listed(operations.find((op) => op.operationId === id)!)?.schema, id).toMatchObject({ maxLength: 255, pattern: '^[\\x21-\\x7E]+$' });
    }
    // Registration and sign-in are public: no header.
    const publicWrites = operations.filter((op) => op.method === 'post' && op.security?.length === 0);
    expect(publicWrites.length).toBeGreaterThan(0);
    for (const op of publicWrites) expect(listed(op), op.operationId).toBeUndefined();
  });

  it('lists the answers the foundation gives before a route runs: 414 on every operation, 413 where a body is read, 429 wherever the rate limiter counts', () => {
    const statuses = (id: string) => Object.keys(operations.find((op) => op.operationId === id)?.responses ?? {});
    for (const id of ['register', 'login']) expect(statuses(id), id).toEqual(expect.arrayContaining(['413', '429']));
    expect(operations.filter((op) => !op.responses['414']).map((op) => op.operationId)).toEqual([]);
    const takesBody = (op: DocumentedOperation) => 'requestBody' in op || ['post', 'put', 'patch', 'delete'].includes(op.method);
    expect(operations.filter((op) => takesBody(op) && !op.responses['413']).map((op) => op.operationId)).toEqual([]);
    // The health probes are the operations the rate limiter leaves alone.
    expect(operations.filter((op) => !op.responses['429']).map((op) => op.operationId)).toEqual(['health', 'healthLive', 'healthReady']);
  });

  it('shows path ids as positive integers', () => {
    const ids = operations.flatMap((op) => (op.parameters ?? []).filter((p) => p.in === 'path' && /(^|_)id$/.test(p.name)));
    expect(ids.length).toBeGreaterThan(10);
    for (const parameter of ids) expect(parameter.schema).toMatchObject({ type: 'integer', minimum: 1 });
  });
});

describe('a typed client generated from the document', () => {
  it('type-checks the journey against the generated types, then runs it against the listening app', { timeout: 180_000 }, async () => {
    const types = path.join(clientDir, 'generated', 'openapi.d.ts');
    const journeyFile = path.join(clientDir, 'journey.ts');
    await writeClientTypes(document, types);
    await typeCheck({ tsconfig: path.join(here, '..', 'tsconfig.json'), files: [journeyFile, types], dir: path.dirname(types), timeoutMs: 150_000 });

    // Imported by URL: the journey's types exist once generated, so the app's own type check
    // (pnpm lint) does not follow it.
    const journey = (await import(pathToFileURL(journeyFile).href)) as {
      JOURNEY_OPERATIONS: readonly string[];
      logTrackerJourney(baseUrl: string, email: string): Promise<{
        projectId: number;
        accepted: number;
        errors: { level: string; message: string; project_id: number }[];
      }>;
    };
    for (const id of journey.JOURNEY_OPERATIONS) expect(operations.map((op) => op.operationId)).toContain(id);

    const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const result = await journey.logTrackerJourney(address, `journey-${Date.now()}@example.test`);
    expect(result.accepted).toBe(2);
    expect(result.errors).toEqual([expect.objectContaining({ level: 'error', message: 'payment declined', project_id: result.projectId })]);
  });
});
