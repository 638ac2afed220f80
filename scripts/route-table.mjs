// Prints, or with --write puts into README.md between its `<!-- routes:<app> -->` markers, the
// table of every route of each app, read from the OpenAPI document the app serves (the same one
// the tests validate): method, path, who may call it, and the operation's summary. Run after
// `pnpm build`; each app starts on an embedded in-memory database and stops once read.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startService } from './bench-lib.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const apps = [
  { name: 'marketplace-api', health: '/api/v1/health', admin: /^\/api\/v1\/admin\// },
  { name: 'logtracker-api', health: '/api/health', admin: null },
];
const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

function access(app, path, operation, document) {
  const security = operation.security ?? document.security ?? [];
  if (security.length === 0) return 'public';
  const schemes = security.map((s) => Object.keys(s).join('+') || 'none');
  if (app.admin?.test(path)) return 'admin';
  if (schemes.includes('none')) return 'optional token';
  if (schemes.includes('ingestKey')) return 'token or ingest key';
  return 'token';
}

function table(app, document) {
  const rows = [];
  for (const [path, item] of Object.entries(document.paths)) {
    for (const method of METHODS) {
      const operation = item[method];
      if (!operation) continue;
      const summary = (operation.summary ?? '').replaceAll('|', '\\|');
      rows.push(`| ${method.toUpperCase()} | \`${path}\` | ${access(app, path, operation, document)} | ${summary} |`);
    }
  }
  return [`${rows.length} operations (every \`GET\` also answers \`HEAD\`).`, '', '| method | path | access | what it does |', '|---|---|---|---|', ...rows].join('\n');
}

const tables = {};
for (const app of apps) {
  const service = await startService(`${root}apps/${app.name}`, { DATA_DIR: 'memory://', LOG_LEVEL: 'warn', NODE_ENV: 'development' }, app.health);
  try {
    tables[app.name] = table(app, await (await fetch(`${service.base}/docs/json`)).json());
  } finally {
    await service.stop();
  }
}

if (process.argv.includes('--write')) {
  const readme = `${root}README.md`;
  let text = readFileSync(readme, 'utf8');
  for (const [name, body] of Object.entries(tables)) {
    const pattern = new RegExp(`(<!-- routes:${name} -->)[\\s\\S]*?(<!-- /routes:${name} -->)`);
    if (!pattern.test(text)) throw new Error(`README.md has no <!-- routes:${name} --> … <!-- /routes:${name} --> markers`);
    text = text.replace(pattern, (_, open, close) => `${open}\n${body}\n${close}`);
  }
  writeFileSync(readme, text);
  console.log('README.md route tables written');
} else {
  for (const [name, body] of Object.entries(tables)) console.log(`## ${name}\n\n${body}\n`);
}
