/**
 * Checks of an app's OpenAPI document for its tests: the validators and linters a new user runs,
 * client types generated from it, and type-checking code written against them. Test-only: the
 * libraries it uses are dev dependencies of this package.
 */
import { execFile } from 'node:child_process';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import SwaggerParser from '@apidevtools/swagger-parser';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import openapiTS, { astToString } from 'openapi-typescript';

export const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

export interface DocumentedOperation {
  method: (typeof HTTP_METHODS)[number];
  path: string;
  operationId?: string;
  summary?: string;
  tags?: string[];
  security?: Record<string, string[]>[];
  parameters?: { name: string; in: string; required?: boolean; schema?: { type?: string } }[];
  responses: Record<string, { description?: string }>;
}

interface OpenApiDocument {
  paths?: Record<string, Partial<Record<string, unknown>>>;
  tags?: { name: string }[];
  servers?: { url: string; description?: string }[];
}

/** Every operation of the document, with its method and path. */
export function operationsOf(document: object): DocumentedOperation[] {
  const operations: DocumentedOperation[] = [];
  for (const [route, item] of Object.entries((document as OpenApiDocument).paths ?? {})) {
    for (const method of HTTP_METHODS) {
      const operation = item?.[method];
      if (operation) operations.push({ ...(operation as Omit<DocumentedOperation, 'method' | 'path'>), method, path: route });
    }
  }
  return operations;
}

/** swagger-parser's validation (the OpenAPI schema and every `$ref`); rejects with its message. */
export async function validateWithSwaggerParser(document: object): Promise<void> {
  // It dereferences in place: the app's document is cached and served, so it works on a copy.
  type Api = Exclude<Parameters<typeof SwaggerParser.validate>[0], string>;
  await SwaggerParser.validate(structuredClone(document) as Api);
}

export interface LintProblem {
  ruleId: string;
  severity: 'error' | 'warn';
  message: string;
  pointer?: string;
}

/** The problems `redocly lint` reports with its `recommended` ruleset. */
export async function lintWithRedocly(document: object): Promise<LintProblem[]> {
  const config = await createConfig({ extends: ['recommended'] });
  const problems = await lintFromString({ source: JSON.stringify(document), absoluteRef: 'openapi.json', config });
  return problems.map((problem) => ({
    ruleId: problem.ruleId,
    severity: problem.severity,
    message: problem.message,
    pointer: problem.location[0]?.pointer,
  }));
}

/**
 * What a new user's tools and a reader would object to in the document, one line each; empty when
 * it is sound: swagger-parser's error, redocly's errors and any warning not in `knownWarnings`
 * (`<ruleId> <pointer>`), an operation without a unique camelCase operationId, a summary, a
 * declared tag or a described response, and servers other than the one relative `/`.
 */
export async function documentProblems(document: object, knownWarnings: readonly string[] = []): Promise<string[]> {
  const problems: string[] = [];
  await validateWithSwaggerParser(document).catch((error: unknown) => problems.push(`swagger-parser: ${String(error)}`));
  for (const problem of await lintWithRedocly(document)) {
    const key = `${problem.ruleId} ${problem.pointer}`;
    if (problem.severity === 'error' || !knownWarnings.includes(key)) problems.push(`redocly ${problem.severity}: ${key}: ${problem.message}`);
  }
  const { tags, servers } = document as OpenApiDocument;
  const declaredTags = new Set(tags?.map((tag) => tag.name));
  const seen = new Set<string>();
  for (const op of operationsOf(document)) {
    const where = `${op.method.toUpperCase()} ${op.path}`;
    if (!op.operationId || !/^[a-z][A-Za-z0-9]+$/.test(op.operationId)) problems.push(`${where}: operationId ${op.operationId}`);
    else if (seen.has(op.operationId)) problems.push(`${where}: operationId ${op.operationId} used twice`);
    else seen.add(op.operationId);
    if (!op.summary) problems.push(`${where}: no summary`);
    if (!op.tags?.length) problems.push(`${where}: no tag`);
    for (const tag of op.tags ?? []) if (!declaredTags.has(tag)) problems.push(`${where}: tag ${tag} is not declared`);
    for (const [status, response] of Object.entries(op.responses)) {
      if (!response.description || response.description === 'Default Response') problems.push(`${where} ${status}: no description`);
    }
  }
  if (JSON.stringify(servers) !== JSON.stringify([{ url: '/', description: 'This server' }])) problems.push(`servers: ${JSON.stringify(servers)}`);
  return problems;
}

/**
 * Writes openapi-typescript's types of the document (`paths`, `operations`, `components`) to
 * `file`. The file is replaced in one step, so a test run beside another never reads it half written.
 */
export async function writeClientTypes(document: object, file: string): Promise<void> {
  const ast = await openapiTS(structuredClone(document) as Parameters<typeof openapiTS>[0], { silent: true });
  await mkdir(path.dirname(file), { recursive: true });
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, astToString(ast));
  await rename(temporary, file);
}

/**
 * `tsc --noEmit` over `files` with the compiler options of `tsconfig` (an app's own), bounded by
 * `timeoutMs`; rejects with the compiler's diagnostics. The project file is written to `dir`
 * (inside the app, where its type packages are found) and removed afterwards.
 */
export async function typeCheck(options: { tsconfig: string; files: string[]; dir: string; timeoutMs?: number }): Promise<void> {
  const project = path.join(options.dir, `tsconfig.check.${process.pid}.json`);
  await mkdir(options.dir, { recursive: true });
  await writeFile(
    project,
    JSON.stringify({
      extends: path.resolve(options.tsconfig),
      compilerOptions: { noEmit: true },
      include: [],
      files: options.files.map((file) => path.resolve(file)),
    }),
  );
  // tsgo, TypeScript's native compiler (the repository's `typecheck`): a few times faster than tsc.
  const tsgo = path.join(path.dirname(createRequire(import.meta.url).resolve('@typescript/native-preview/package.json')), 'bin', 'tsgo');
  try {
    await new Promise<void>((resolve, reject) => {
      execFile(process.execPath, [tsgo, '-p', project], { timeout: options.timeoutMs ?? 120_000 }, (error, stdout, stderr) => {
        if (error) reject(new Error(`tsgo failed (${error.killed ? 'timed out' : `exit ${error.code}`}):\n${stdout}${stderr}`));
        else resolve();
      });
    });
  } finally {
    await rm(project, { force: true });
  }
}

/**
 * Whether the operation refuses a caller without credentials: its own requirements, else the
 * document's; an empty requirement `{}` lets anyone in.
 */
export function requiresCredentials(operation: DocumentedOperation, document: object): boolean {
  const security = operation.security ?? (document as { security?: Record<string, string[]>[] }).security ?? [];
  return security.length > 0 && security.every((requirement) => Object.keys(requirement).length > 0);
}

/**
 * The URL of each operation with its path parameters filled in (`1` for integers, `x` otherwise),
 * to call it as a client without credentials would.
 */
export function exampleUrl(operation: DocumentedOperation): string {
  return operation.path.replace(/\{([^}]+)\}/g, (_match, name: string) => {
    const parameter = operation.parameters?.find((p) => p.in === 'path' && p.name === name);
    return parameter?.schema?.type === 'integer' || parameter?.schema?.type === 'number' ? '1' : 'x';
  });
}

/**
 * The value of a sample in a Prometheus text exposition: the first line of metric `name` whose
 * labels include every one of `labels`; undefined when there is none.
 */
export function sampleValue(exposition: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of exposition.split('\n')) {
    if (line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)/.exec(line);
    if (!match || match[1] !== name) continue;
    const found: Record<string, string> = {};
    for (const pair of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) found[pair[1] as string] = pair[2] as string;
    if (Object.entries(labels).every(([key, value]) => found[key] === value)) return Number(match[3]);
  }
  return undefined;
}

/** Every metric name (`# TYPE` lines) of a Prometheus text exposition. */
export function metricNames(exposition: string): Set<string> {
  return new Set([...exposition.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1] as string));
}
