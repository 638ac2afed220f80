import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { appRouteTable, firstDifference, operationsWithoutSite, readRouteSection, recordRouteSites, ROUTES_DOC, type RouteTableDocument } from '@repo/route-suite/route-table';
import { expect, it } from 'vitest';
import { buildTestApp } from './helpers.js';

// docs/routes.md lists every route with the file and line that declares it; this keeps it current.
// The table is rendered by the code `pnpm routes` (scripts/route-table.mjs) writes it with.
const root = fileURLToPath(new URL('../../../', import.meta.url));
const APP = 'marketplace-api';

it(`${ROUTES_DOC} lists every route of ${APP} where it is declared`, async () => {
  const { onRoute, sites } = recordRouteSites(root);
  const t = await buildTestApp({}, { onRoute });
  try {
    const document = t.app.swagger() as RouteTableDocument;
    expect(operationsWithoutSite(document, sites), 'operations whose declaration was not found').toEqual([]);
    const table = appRouteTable(APP, document, sites);
    const documented = readRouteSection(readFileSync(`${root}${ROUTES_DOC}`, 'utf8'), APP);
    if (documented !== table) {
      const why = documented === undefined ? `it has no <!-- routes:${APP} --> markers` : firstDifference(table, documented);
      expect.fail(`${ROUTES_DOC} is stale: run \`pnpm routes\` and commit it (${why})`);
    }
  } finally {
    await t.close();
  }
});
