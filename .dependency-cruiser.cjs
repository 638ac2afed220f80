/**
 * The boundaries between modules, apps and packages (docs/architecture.md), checked by `pnpm lint`.
 * A module is a folder under `apps/<app>/src/modules/`; what it offers the rest of its app is its
 * `index.ts`. The layers inside an app (routes → services → repositories) are eslint.config.js's.
 * No exceptions: a rule that needs one is a design to change.
 */
const MODULE = '^apps/([^/]+)/src/modules/([^/]+)/';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-cycle',
      severity: 'error',
      comment: 'No import cycle, between files or through a module entry: what depends on what reads one way.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'module-internals',
      severity: 'error',
      comment: 'Another module is reached through its index.ts only; its files are its own to change.',
      from: { path: MODULE },
      to: { path: '^apps/$1/src/modules/[^/]+/', pathNot: ['^apps/$1/src/modules/$2/', '^apps/$1/src/modules/[^/]+/index\\.ts$'] },
    },
    {
      name: 'app-reaches-module-internals',
      severity: 'error',
      comment: 'The app, its jobs and its command lines reach a module through its index.ts only.',
      from: { path: '^apps/([^/]+)/src/', pathNot: MODULE },
      to: { path: '^apps/$1/src/modules/[^/]+/', pathNot: '^apps/$1/src/modules/[^/]+/index\\.ts$' },
    },
    {
      name: 'lower-layers-import-no-module',
      severity: 'error',
      comment: 'lib, db and integrations sit below the modules: they never import one.',
      from: { path: '^apps/([^/]+)/src/(lib|db|integrations)/' },
      to: { path: '^apps/$1/src/modules/' },
    },
    {
      name: 'app-imports-other-app',
      severity: 'error',
      comment: 'The apps are deployed on their own: share code through a workspace package.',
      from: { path: '^apps/([^/]+)/' },
      to: { path: '^apps/', pathNot: '^apps/$1/' },
    },
    {
      name: 'package-imports-app',
      severity: 'error',
      comment: 'Packages never import an app.',
      from: { path: '^packages/' },
      to: { path: '^apps/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(dist|node_modules|drizzle|coverage)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.base.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.tsx', '.js', '.mjs', '.json'] },
  },
};
