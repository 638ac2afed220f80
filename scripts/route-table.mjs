// Prints, or with --write puts into docs/routes.md between its `<!-- routes:<app> -->` markers, the
// table of every route of each app: method, path, who may call it and the operation's summary,
// read from the OpenAPI document the app serves (the one the tests validate), and the `file:line`
// where its handler is declared, read from the code as the app registers its routes.
//
// `pnpm routes` builds and runs it. Each app is built in this process from its build (dist/) on an
// in-memory database, with the settings its tests use, and closed once read; the declaration
// sites are mapped back to the TypeScript sources through the build's source maps. Each app's
// test/route-table.test.ts renders the same table from the sources and fails when docs/routes.md
// differs.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  appRouteTable,
  operationsWithoutSite,
  recordRouteSites,
  ROUTE_TABLE_APPS,
  ROUTES_DOC,
  writeRouteSection,
} from '../packages/route-suite/dist/route-table.js';

const root = fileURLToPath(new URL('..', import.meta.url));

// As each app's test/helpers.ts builds it (buildTestApp).
const TEST_ENV = { NODE_ENV: 'test', LOG_LEVEL: 'silent', DATA_DIR: 'memory://', PASSWORD_HASH_COST: 'low' };
const ENV = {
  'marketplace-api': TEST_ENV,
  'logtracker-api': { ...TEST_ENV, RATE_LIMIT_AUTHENTICATED: '100000', RATE_LIMIT_PUBLIC: '100000' },
};

async function tableOf(name) {
  const dist = pathToFileURL(`${root}apps/${name}/dist/`);
  const { buildApp } = await import(new URL('app.js', dist).href);
  const { loadConfig } = await import(new URL('config.js', dist).href);
  const { onRoute, sites } = recordRouteSites(root);
  const app = await buildApp(loadConfig(ENV[name]), { onRoute });
  try {
    await app.ready();
    const document = app.swagger();
    const missing = operationsWithoutSite(document, sites);
    if (missing.length > 0) throw new Error(`${name}: no declaration found for ${missing.join(', ')}`);
    return appRouteTable(name, document, sites);
  } finally {
    await app.close();
  }
}

const tables = {};
for (const name of Object.keys(ROUTE_TABLE_APPS)) tables[name] = await tableOf(name);

if (process.argv.includes('--write')) {
  const file = `${root}${ROUTES_DOC}`;
  let text = readFileSync(file, 'utf8');
  for (const [name, table] of Object.entries(tables)) text = writeRouteSection(text, name, table);
  writeFileSync(file, text);
  console.log(`${ROUTES_DOC}: route tables written`);
} else {
  for (const [name, table] of Object.entries(tables)) console.log(`## ${name}\n\n${table}\n`);
}
