import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import {
  declarationSite,
  firstDifference,
  openApiPath,
  operationsWithoutSite,
  readRouteSection,
  recordRouteSites,
  renderRouteTable,
  writeRouteSection,
  type RouteSite,
} from '../src/route-table.js';

const root = mkdtempSync(path.join(tmpdir(), 'route-table-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('declarationSite', () => {
  it('takes the innermost frame of the repository, past dependencies, this package and tests', () => {
    const stack = [
      'Error: ',
      `    at Object.onRoute (${root}/packages/route-suite/src/route-table.ts:101:19)`,
      `    at Object.addNewRoute (${root}/node_modules/.pnpm/fastify@5.12.8/node_modules/fastify/lib/route.js:301:16)`,
      `    at Object._get [as get] (${root}/node_modules/.pnpm/fastify@5.12.8/node_modules/fastify/fastify.js:202:34)`,
      `    at ${root}/apps/shop/src/modules/booking/offers/offers.routes.ts:42:9`,
      `    at Plugin.exec (${root}/node_modules/.pnpm/avvio@9.3.1/node_modules/avvio/lib/plugin.js:138:28)`,
    ].join('\n');
    expect(declarationSite(stack, root)).toEqual({ file: 'apps/shop/src/modules/booking/offers/offers.routes.ts', line: 42 });
  });

  it('reads file:// frames and maps a built file back to its source through its map', () => {
    const dist = path.join(root, 'packages/web/dist');
    mkdirSync(dist, { recursive: true });
    // Generated line 3 (0-based 2), column 0 → source 0, line 10 (0-based 9): ";;AAST".
    writeFileSync(path.join(dist, 'health.js.map'), JSON.stringify({ version: 3, file: 'health.js', sources: ['../src/health.ts'], names: [], mappings: ';;AAST' }));
    writeFileSync(path.join(dist, 'health.js'), '\n\napp.get();\n');
    const stack = `Error: \n    at health (file://${dist}/health.js:3:1)\n    at elsewhere (/somewhere/else.js:1:1)`;
    expect(declarationSite(stack, root)).toEqual({ file: 'packages/web/src/health.ts', line: 10 });
  });

  it("finds nothing when no frame is the repository's", () => {
    expect(declarationSite('Error: \n    at /elsewhere/file.js:1:1\n    at node:internal/process/task_queues:95:5', root)).toBeUndefined();
  });
});

describe('the table', () => {
  const document = {
    security: [{ bearerAuth: [] }],
    paths: {
      '/api/health': { get: { operationId: 'health', summary: 'Health', security: [] } },
      '/api/offers/{offer}': {
        get: { operationId: 'showOffer', summary: 'An offer | its state' },
        delete: { operationId: 'dropOffer', summary: 'Drop it', security: [{}, { bearerAuth: [] }] },
      },
      '/api/admin/users': { get: { operationId: 'listUsers', summary: 'Users' } },
    },
  };
  const sites = new Map<string, RouteSite>([
    ['health', { file: 'packages/http/src/health.ts', line: 52 }],
    ['showOffer', { file: 'apps/shop/src/modules/booking/offers/offers.routes.ts', line: 42 }],
    ['DELETE /api/offers/{offer}', { file: 'apps/shop/src/app.ts', line: 7 }],
  ]);

  it("gives each operation its access and its handler as a link from the document's folder", () => {
    expect(renderRouteTable({ document, sites, admin: /^\/api\/admin\//, from: 'docs' }).split('\n')).toEqual([
      '4 operations (every `GET` also answers `HEAD`).',
      '',
      '| method | path | access | what it does | handler |',
      '|---|---|---|---|---|',
      '| GET | `/api/health` | public | Health | [packages/http/src/health.ts:52](../packages/http/src/health.ts#L52) |',
      '| GET | `/api/offers/{offer}` | token | An offer \\| its state | [booking/offers/offers.routes.ts:42](../apps/shop/src/modules/booking/offers/offers.routes.ts#L42) |',
      '| DELETE | `/api/offers/{offer}` | optional token | Drop it | [src/app.ts:7](../apps/shop/src/app.ts#L7) |',
      '| GET | `/api/admin/users` | admin | Users | — |',
    ]);
    expect(operationsWithoutSite(document, sites)).toEqual(['GET /api/admin/users']);
  });

  it('is read from and written between its markers, the rest of the file kept', () => {
    const text = 'intro\n\n<!-- routes:shop -->\n<!-- /routes:shop -->\n\nafter\n';
    const written = writeRouteSection(text, 'shop', 'row 1\nrow 2');
    expect(written).toBe('intro\n\n<!-- routes:shop -->\nrow 1\nrow 2\n<!-- /routes:shop -->\n\nafter\n');
    expect(readRouteSection(written, 'shop')).toBe('row 1\nrow 2');
    expect(writeRouteSection(written, 'shop', 'row 3')).toBe('intro\n\n<!-- routes:shop -->\nrow 3\n<!-- /routes:shop -->\n\nafter\n');
    expect(readRouteSection(text, 'other')).toBeUndefined();
    expect(() => writeRouteSection(text, 'other', 'x')).toThrow(/no <!-- routes:other -->/);
    expect(firstDifference('a\nb', 'a\nc')).toContain('line 2 of the table');
  });
});

describe('recordRouteSites', () => {
  it('records where each route is declared, by operationId and by method and path; the first declaration wins', async () => {
    const src = path.join(root, 'apps/shop/src');
    mkdirSync(src, { recursive: true });
    writeFileSync(
      path.join(src, 'routes.mjs'),
      [
        'export function declare(onRoute) {',
        "  onRoute({ method: 'GET', url: '/api/x/:id', schema: { operationId: 'showX' } });",
        "  onRoute({ method: 'HEAD', url: '/api/x/:id', schema: { operationId: 'showX' } });",
        "  onRoute({ method: ['PUT', 'PATCH'], url: '/api/x/:id(^\\\\d+)' });",
        '}',
      ].join('\n'),
    );
    const { onRoute, sites } = recordRouteSites(root);
    const { declare } = (await import(pathToFileURL(path.join(src, 'routes.mjs')).href)) as { declare: (hook: typeof onRoute) => void };
    declare(onRoute);
    const at = (line: number) => ({ file: 'apps/shop/src/routes.mjs', line });
    expect(Object.fromEntries(sites)).toEqual({
      showX: at(2),
      'GET /api/x/{id}': at(2),
      'HEAD /api/x/{id}': at(3),
      'PUT /api/x/{id}': at(4),
      'PATCH /api/x/{id}': at(4),
    });
    // A declaration made from a test (or from outside the repository) is nobody's.
    onRoute({ method: 'GET', url: '/api/y', schema: { operationId: 'y' } });
    expect(sites.has('y')).toBe(false);
    expect(openApiPath('/api/v1/offers/:offer/photos/:photo(^\\d+)')).toBe('/api/v1/offers/{offer}/photos/{photo}');
  });
});
