import { fileURLToPath } from 'node:url';
import { checkRouteTable, recordRouteSites, ROUTES_DOC, type RouteTableDocument } from '@repo/route-suite/route-table';
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
    const { unplaced, stale } = checkRouteTable(APP, t.app.swagger() as RouteTableDocument, sites, root);
    expect(unplaced, 'operations whose declaration was not found').toEqual([]);
    if (stale) expect.fail(stale);
  } finally {
    await t.close();
  }
});
