/**
 * The route table of docs/routes.md: every operation of an app's OpenAPI document with its method,
 * path, who may call it, what it does and where its handler is declared (`file:line`, a link from
 * docs/ to the source). `scripts/route-table.mjs` writes it (`pnpm routes`) and each app's
 * `test/route-table.test.ts` fails when the file no longer matches the code; both render it here.
 *
 * Where a route is declared is read from the code itself: `recordRouteSites` gives an `onRoute`
 * hook for the app factory, which Fastify calls from inside the `app.get(…)` (or `app.route(…)`)
 * call; the innermost stack frame in the repository's own sources is that call. A frame in a
 * built file (`dist/*.js`) is mapped back to its TypeScript source through the source map tsc
 * wrote beside it, so the script (over the build) and the tests (over the sources) agree.
 */
import { existsSync, readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Where a route is declared: a path from the repository's root (with `/`) and a 1-based line. */
export interface RouteSite {
  file: string;
  line: number;
}

/** What the hook reads of Fastify's route options. */
export interface DeclaredRoute {
  method: string | string[];
  url: string;
  schema?: unknown;
}

export interface RouteSites {
  /** Give it to the app factory (`buildApp(config, { onRoute })`) before any route is declared. */
  onRoute: (route: DeclaredRoute) => void;
  /** Where each route was declared, by `operationId` and by `METHOD /path/{param}`. */
  readonly sites: ReadonlyMap<string, RouteSite>;
}

const FRAME = /^\s*at (?:.*? \()?((?:file:\/\/)?[^()\s]+?):(\d+):(\d+)\)?$/;

/** `/api/v1/offers/:offer` → `/api/v1/offers/{offer}`, as the OpenAPI document writes it. */
export function openApiPath(url: string): string {
  return url.replace(/:([A-Za-z0-9_]+)(\([^)]*\))?/g, '{$1}');
}

function operationIdOf(schema: unknown): string | undefined {
  if (typeof schema !== 'object' || schema === null) return undefined;
  const id = (schema as { operationId?: unknown }).operationId;
  return typeof id === 'string' ? id : undefined;
}

const maps = new Map<string, SourceMap | null>();

/** The source map tsc wrote beside a built file, if any. */
function sourceMapOf(file: string): SourceMap | null {
  let map = maps.get(file);
  if (map === undefined) {
    const mapFile = `${file}.map`;
    map = existsSync(mapFile) ? new SourceMap(JSON.parse(readFileSync(mapFile, 'utf8'))) : null;
    maps.set(file, map);
  }
  return map;
}

/** A built file's position mapped to its source (1-based line and column in, and out). */
function original(file: string, line: number, column: number): { file: string; line: number } {
  if (!file.endsWith('.js')) return { file, line };
  const map = sourceMapOf(file);
  const entry = map?.findEntry(line - 1, column - 1) as { originalSource?: string; originalLine?: number } | undefined;
  if (!entry?.originalSource || entry.originalLine === undefined) return { file, line };
  const source = entry.originalSource.startsWith('file://') ? fileURLToPath(entry.originalSource) : path.resolve(path.dirname(file), entry.originalSource);
  return { file: source, line: entry.originalLine + 1 };
}

/**
 * The innermost frame of `stack` in the repository's own code (not a dependency, not this
 * package, not a test), mapped to its TypeScript source.
 */
export function declarationSite(stack: string, repoRoot: string): RouteSite | undefined {
  const root = path.resolve(repoRoot);
  for (const text of stack.split('\n')) {
    const match = FRAME.exec(text);
    if (!match) continue;
    const [, location = '', line = '0', column = '0'] = match;
    const file = location.startsWith('file://') ? fileURLToPath(location) : location;
    const relative = path.relative(root, file).split(path.sep).join('/');
    if (relative.startsWith('..') || path.isAbsolute(relative)) continue;
    if (relative.includes('node_modules/') || relative.startsWith('packages/route-suite/') || /(^|\/)test\//.test(relative)) continue;
    const mapped = original(file, Number(line), Number(column));
    return { file: path.relative(root, mapped.file).split(path.sep).join('/'), line: mapped.line };
  }
  return undefined;
}

/** Records where each route of an app is declared, for the route table. */
export function recordRouteSites(repoRoot: string): RouteSites {
  const sites = new Map<string, RouteSite>();
  const onRoute = (route: DeclaredRoute) => {
    // Fastify's own frames come first (the shorthand, prepareRoute, route, addNewRoute, the HEAD
    // route it adds for a GET): room enough for them and the call that declared the route.
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 50;
    const stack = new Error().stack ?? '';
    Error.stackTraceLimit = limit;
    const site = declarationSite(stack, repoRoot);
    if (!site) return;
    const keys = (Array.isArray(route.method) ? route.method : [route.method]).map((method) => `${method.toUpperCase()} ${openApiPath(route.url)}`);
    const id = operationIdOf(route.schema);
    if (id) keys.push(id);
    // The HEAD route Fastify adds for a GET comes after it, with the same operationId: first wins.
    for (const key of keys) if (!sites.has(key)) sites.set(key, site);
  };
  return { onRoute, sites };
}

/** The parts of an OpenAPI document the table reads. */
export interface RouteTableDocument {
  security?: Array<Record<string, unknown>>;
  paths: Record<string, Record<string, unknown>>;
}

interface TableOperation {
  operationId?: string;
  summary?: string;
  security?: Array<Record<string, unknown>>;
}

export interface RouteTableOptions {
  document: RouteTableDocument;
  sites: ReadonlyMap<string, RouteSite>;
  /** Paths only administrators may call (the marketplace's back office). */
  admin?: RegExp;
  /** The folder, from the repository's root, of the file the table goes into: links are relative to it. */
  from: string;
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

/** The file the tables live in, from the repository's root. */
export const ROUTES_DOC = 'docs/routes.md';

/** What each app's table needs beyond its document: the paths only administrators may call. */
export const ROUTE_TABLE_APPS: Readonly<Record<string, { admin?: RegExp }>> = {
  'marketplace-api': { admin: /^\/api\/v1\/admin\// },
  'logtracker-api': {},
};

/** An app's table as docs/routes.md holds it. */
export function appRouteTable(app: string, document: RouteTableDocument, sites: ReadonlyMap<string, RouteSite>): string {
  const settings = ROUTE_TABLE_APPS[app];
  if (!settings) throw new Error(`no route table settings for ${app}`);
  return renderRouteTable({ document, sites, admin: settings.admin, from: path.posix.dirname(ROUTES_DOC) });
}

function access(url: string, operation: TableOperation, document: RouteTableDocument, admin: RegExp | undefined): string {
  const security = operation.security ?? document.security ?? [];
  if (security.length === 0) return 'public';
  const schemes = security.map((s) => Object.keys(s).join('+') || 'none');
  if (admin?.test(url)) return 'admin';
  if (schemes.includes('none')) return 'optional token';
  if (schemes.includes('ingestKey')) return 'token or ingest key';
  return 'token';
}

/** `booking/offers/offers.routes.ts:42` for a module's file, else the path from the app's folder (or the repository's root for a package). */
function siteLabel(site: RouteSite): string {
  const file = site.file.replace(/^apps\/[^/]+\/src\/modules\//, '').replace(/^apps\/[^/]+\//, '');
  return `${file}:${site.line}`;
}

/** The operations of the document without a recorded declaration site (`METHOD /path`). */
export function operationsWithoutSite(document: RouteTableDocument, sites: ReadonlyMap<string, RouteSite>): string[] {
  const missing: string[] = [];
  for (const [url, item] of Object.entries(document.paths)) {
    for (const method of METHODS) {
      const operation = item[method] as TableOperation | undefined;
      if (operation && !siteOf(method, url, operation, sites)) missing.push(`${method.toUpperCase()} ${url}`);
    }
  }
  return missing;
}

function siteOf(method: string, url: string, operation: TableOperation, sites: ReadonlyMap<string, RouteSite>): RouteSite | undefined {
  return (operation.operationId ? sites.get(operation.operationId) : undefined) ?? sites.get(`${method.toUpperCase()} ${url}`);
}

/** The Markdown of an app's table: a count line, then one row per operation in the document's order. */
export function renderRouteTable({ document, sites, admin, from }: RouteTableOptions): string {
  const rows: string[] = [];
  for (const [url, item] of Object.entries(document.paths)) {
    for (const method of METHODS) {
      const operation = item[method] as TableOperation | undefined;
      if (!operation) continue;
      const summary = (operation.summary ?? '').replaceAll('|', '\\|');
      const site = siteOf(method, url, operation, sites);
      const handler = site ? `[${siteLabel(site)}](${path.posix.relative(from, site.file)}#L${site.line})` : '—';
      rows.push(`| ${method.toUpperCase()} | \`${url}\` | ${access(url, operation, document, admin)} | ${summary} | ${handler} |`);
    }
  }
  return [
    `${rows.length} operations (every \`GET\` also answers \`HEAD\`).`,
    '',
    '| method | path | access | what it does | handler |',
    '|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}

function sectionPattern(name: string): RegExp {
  return new RegExp(`(<!-- routes:${name} -->\\n)([\\s\\S]*?)\\n?(<!-- /routes:${name} -->)`);
}

/** The table between `<!-- routes:<name> -->` and `<!-- /routes:<name> -->`, or undefined without the markers. */
export function readRouteSection(text: string, name: string): string | undefined {
  return sectionPattern(name).exec(text)?.[2];
}

/** `text` with the table between the app's markers replaced; throws when the markers are missing. */
export function writeRouteSection(text: string, name: string, table: string): string {
  const pattern = sectionPattern(name);
  if (!pattern.test(text)) throw new Error(`no <!-- routes:${name} --> … <!-- /routes:${name} --> markers`);
  return text.replace(pattern, (_, open: string, _old: string, close: string) => `${open}${table}\n${close}`);
}

/** The first line where two tables differ, for a failure message. */
export function firstDifference(expected: string, actual: string): string {
  const a = expected.split('\n');
  const b = actual.split('\n');
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if (a[i] !== b[i]) return `line ${i + 1} of the table:\n  code:          ${a[i] ?? '(none)'}\n  docs/routes.md: ${b[i] ?? '(none)'}`;
  }
  return 'no difference';
}

/**
 * What keeps an app's section of docs/routes.md from being current, for the test that guards it:
 * the operations whose declaration was not found, and why the section differs (undefined when it
 * is current).
 */
export function checkRouteTable(
  app: string,
  document: RouteTableDocument,
  sites: ReadonlyMap<string, RouteSite>,
  repoRoot: string,
): { unplaced: string[]; stale?: string } {
  const unplaced = operationsWithoutSite(document, sites);
  const table = appRouteTable(app, document, sites);
  const documented = readRouteSection(readFileSync(`${repoRoot}${ROUTES_DOC}`, 'utf8'), app);
  if (documented === table) return { unplaced };
  const why = documented === undefined ? `it has no <!-- routes:${app} --> markers` : firstDifference(table, documented);
  return { unplaced, stale: `${ROUTES_DOC} is stale: run \`pnpm routes\` and commit it (${why})` };
}

