import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

/** An app never imports the other (by package name or by a path into it). */
const appBoundaries = [
  {
    group: ['marketplace-api', 'marketplace-api/*', 'logtracker-api', 'logtracker-api/*', '**/marketplace-api/**', '**/logtracker-api/**'],
    message: 'The apps are deployed on their own: share code through a workspace package.',
  },
];

const noSqlInServices = {
  selector: "ImportDeclaration[source.value=/^drizzle-orm/]",
  message: 'Services and jobs build no SQL: move the query into the module repository and call it.',
};
const oneRecorder = {
  selector: "ImportDeclaration[source.value=/activity-log[.]repository[.]js$/]",
  message: "Record activity through the injected recorder (createActivityRecorder), not the activity log's repository.",
};

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', '**/.data/**', '**/drizzle/**', '**/coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: globals.node },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': 'error',
    },
  },
  {
    files: ['**/scripts/**', '**/bench/**', '**/*.config.*'],
    rules: { 'no-console': 'off' },
  },
  // The log explorer runs in the browser (Preact, TSX).
  {
    files: ['packages/log-explorer/src/**/*.{ts,tsx}'],
    languageOptions: { globals: globals.browser },
  },
  // Module boundaries (STYLE.md): handlers call services and never touch SQL; services and
  // repositories never reach back into routes; repositories never call services; jobs call services
  // and never touch SQL; the apps never import each other, and the packages never import an app.
  {
    files: ['apps/*/src/**/*.routes.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [
        { group: ['**/*.repository.js'], message: 'Routes call a service; queries live in repositories behind it.' },
        { group: ['drizzle-orm', 'drizzle-orm/*'], message: 'Routes build no SQL: call a service.' },
        ...appBoundaries,
      ] }],
    },
  },
  {
    files: ['apps/*/src/**/*.service.ts', 'apps/*/src/integrations/**'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [
        { group: ['**/*.routes.js'], message: 'Services and jobs never import routes.' },
        ...appBoundaries,
      ] }],
    },
  },
  {
    files: ['apps/*/src/jobs/**'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [
        { group: ['**/*.routes.js'], message: 'Services and jobs never import routes.' },
        { group: ['**/*.repository.js'], message: 'Jobs schedule and call a service; queries live in repositories behind it.' },
        { group: ['drizzle-orm', 'drizzle-orm/*'], message: 'Jobs build no SQL: call a service.' },
        ...appBoundaries,
      ] }],
    },
  },
  {
    files: ['apps/*/src/**/*.repository.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [
        { group: ['**/*.routes.js', '**/*.service.js'], message: 'Repositories hold queries only: they call no service and no route.' },
        ...appBoundaries,
      ] }],
    },
  },
  {
    files: ['apps/*/src/**/*.ts', 'apps/*/test/**/*.ts'],
    ignores: ['apps/*/src/**/*.routes.ts', 'apps/*/src/**/*.service.ts', 'apps/*/src/**/*.repository.ts', 'apps/*/src/jobs/**', 'apps/*/src/integrations/**'],
    rules: { 'no-restricted-imports': ['error', { patterns: appBoundaries }] },
  },
  // The marketplace's service rules (STYLE.md): SQL lives in repositories only, and the activity log
  // is written through the one recorder that the app builds, never through its repository.
  {
    files: ['apps/marketplace-api/src/**/*.ts'],
    ignores: ['apps/marketplace-api/src/modules/activity-log/**'],
    rules: { 'no-restricted-syntax': ['error', oneRecorder] },
  },
  {
    files: ['apps/marketplace-api/src/**/*.service.ts', 'apps/marketplace-api/src/jobs/**'],
    ignores: ['apps/marketplace-api/src/modules/activity-log/**'],
    rules: { 'no-restricted-syntax': ['error', oneRecorder, noSqlInServices] },
  },
  {
    files: ['apps/marketplace-api/src/modules/activity-log/*.service.ts'],
    rules: { 'no-restricted-syntax': ['error', noSqlInServices] },
  },
  {
    files: ['packages/*/src/**/*.{ts,tsx}'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [
        { group: ['marketplace-api', 'marketplace-api/*', 'logtracker-api', 'logtracker-api/*', '**/apps/**'], message: 'Packages never import an app.' },
        { regex: '^\\./index\\.js$', message: "A package's index only re-exports: import the file that holds the code, so that no import cycle runs through the entry." },
      ] }],
    },
  },
);
