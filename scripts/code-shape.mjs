// Fails (exit 1) when a source file or a function grows past what a reader holds in mind at once
// (docs/architecture.md): no file of apps/*/src or packages/*/src (.ts, and the explorer's .tsx) over 400 lines, no function whose
// own body is over 80 lines. A function's own lines leave out the functions it defines inside
// (a service factory is as long as its longest method), and route registration (`*.routes.ts`),
// which is a list of routes, is not held to it. The exceptions are named below, with their reason.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import ts from 'typescript';

const MAX_FILE_LINES = 400;
const MAX_FUNCTION_LINES = 80;
const LONG_FILES = new Map([
  // The pattern miner: one algorithm (Drain) with its tree, masks and merge rules, read top to bottom.
  ['apps/logtracker-api/src/modules/patterns/drain.ts', 'the pattern miner'],
  // Generated from the log tracker's OpenAPI document (pnpm --filter @repo/logtracker-client generate).
  ['packages/logtracker-client/src/generated/openapi.ts', 'generated types'],
]);

const files = execFileSync('git', ['ls-files', '-co', '--exclude-standard', 'apps/*/src/**.ts', 'packages/*/src/**.ts', 'packages/*/src/**.tsx'], { encoding: 'utf8' })
  .split('\n')
  .filter((file) => file && !file.includes('/migrations/'));

const isFunction = (node) =>
  ts.isFunctionDeclaration(node) || ts.isFunctionExpression(node) || ts.isArrowFunction(node) || ts.isMethodDeclaration(node);

function nameOf(node) {
  if (node.name) return node.name.getText();
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) return parent.name.getText();
  return '(anonymous)';
}

const problems = [];
for (const file of files) {
  const text = readFileSync(file, 'utf8');
  const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
  if (lines > MAX_FILE_LINES && !LONG_FILES.has(file)) problems.push(`${file}: ${lines} lines (at most ${MAX_FILE_LINES})`);
  if (file.endsWith('.routes.ts')) continue;
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const line = (position) => source.getLineAndCharacterOfPosition(position).line;
  const span = (node) => line(node.getEnd()) - line(node.getStart()) + 1;
  const ownLines = (fn) => {
    let own = span(fn);
    const visit = (node) => {
      if (isFunction(node)) own -= span(node);
      else ts.forEachChild(node, visit);
    };
    ts.forEachChild(fn, visit);
    return own;
  };
  const visit = (node) => {
    if (isFunction(node)) {
      const own = ownLines(node);
      if (own > MAX_FUNCTION_LINES) problems.push(`${file}:${line(node.getStart()) + 1}: ${nameOf(node)} is ${own} lines (at most ${MAX_FUNCTION_LINES})`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
}

if (problems.length > 0) {
  console.error(`Code shape: ${problems.length} problem(s)\n  ${problems.join('\n  ')}`);
  process.exit(1);
}
console.log(`Code shape: ${files.length} files, none over ${MAX_FILE_LINES} lines, no function over ${MAX_FUNCTION_LINES} lines of its own`);
