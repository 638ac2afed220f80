import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, utimesSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BaseSequencer, type TestSequencer, type TestSpecification, type Vitest } from 'vitest/node';

/**
 * What marks a test file as one that runs against the test database: the apps' test helpers, the
 * package's fresh databases, or the server's URL itself.
 */
const OPENS_TEST_DATABASE = /helpers\.js'|createTestDatabase|TEST_DATABASE_URL/;

/**
 * The test files a pass on PostgreSQL leaves out, for a vitest config's `exclude`. CI runs the suite
 * twice, on PGlite and then on PostgreSQL (TEST_DATABASE_ONLY=1, set by .ci/run for that pass): a
 * file that never opens the test database (pure functions, the miner, a CLI over a PGlite data
 * directory of its own) gives the same result both times, so the second pass runs only the files
 * that do. Without TEST_DATABASE_ONLY every file runs. A listed file that does open the test
 * database throws, so that the list cannot quietly keep it from PostgreSQL.
 */
export function withoutTestDatabase(root: string, files: readonly string[]): string[] {
  for (const file of files) {
    if (OPENS_TEST_DATABASE.test(readFileSync(join(root, file), 'utf8'))) {
      throw new Error(`${file} opens the test database: it must run on PostgreSQL too, take it off the list`);
    }
  }
  return process.env.TEST_DATABASE_ONLY ? [...files] : [];
}

/**
 * True in CI's pass on PostgreSQL (TEST_DATABASE_ONLY=1). For the tests inside a file that does open
 * the test database but that themselves run on PGlite whatever the pass (a CLI over a PGlite data
 * directory of its own, the PGlite copies themselves): `describe.skipIf(secondPass)` gives their
 * answer once, in the pass on PGlite.
 */
export const secondPass = Boolean(process.env.TEST_DATABASE_ONLY);

/**
 * The vitest `test` options both apps' suites share, for the app whose folder is `root`: its files
 * under test/, `withoutDatabase` left out of the pass on PostgreSQL (see withoutTestDatabase),
 * `defaultExclude` being vitest's `configDefaults.exclude`. `sameOnEither` lists files that do open
 * the test database but whose answer does not depend on which it is (the OpenAPI document, built
 * from the routes' schemas): they too run in the pass on PGlite only.
 */
export function appTestOptions(
  root: URL,
  defaultExclude: readonly string[],
  withoutDatabase: readonly string[],
  sameOnEither: readonly string[] = [],
  slowest: readonly string[] = [],
) {
  return {
    sequence: { sequencer: slowFirst(slowest) },
    include: ['test/**/*.test.ts'],
    exclude: [...defaultExclude, ...withoutTestDatabase(fileURLToPath(root), withoutDatabase), ...(secondPass ? sameOnEither : [])],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Each file gets its own database. On PGlite the database runs in the worker: two workers match
    // the machine's two cores. On a server the workers wait on it (and on the CLIs some tests
    // start) a good part of the time: a third keeps the cores busy.
    maxWorkers: process.env.TEST_DATABASE_URL ? 3 : 2,
    // The files share their worker's modules (no test mocks a module or keeps state in one): each
    // file re-importing the app's module graph, and warming it up anew, cost more than its tests.
    isolate: false,
  };
}

export interface NodeRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `node …args` in `cwd` with only PATH and `env` for environment: its exit code and output. */
export function runNode(cwd: string, args: string[], env: Record<string, string>): Promise<NodeRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd, env: { PATH: process.env.PATH ?? '', ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The newest modification time of a file under a directory. */
function newestUnder(dir: string): number {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newestUnder(path) : statSync(path).mtimeMs);
  }
  return latest;
}

/**
 * The path of an app's built command (`dist/cli/<name>.js`), for a test that runs it as the
 * platform does. CI builds before testing; a local run after editing the sources builds the app
 * first (its `tsconfig.build.json`). A build with nothing to emit (sources saved unchanged) leaves
 * the output as it was: the command's time is brought forward so that the next run does not build
 * again.
 */
export async function builtCli(appDir: string, name: string): Promise<string> {
  const cli = join(appDir, 'dist', 'cli', `${name}.js`);
  if (existsSync(cli) && statSync(cli).mtimeMs >= newestUnder(join(appDir, 'src'))) return cli;
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const build = await runNode(appDir, [tsc, '-p', 'tsconfig.build.json'], {});
  if (build.code !== 0) throw new Error(`build failed:\n${build.stdout}${build.stderr}`);
  const now = new Date();
  utimesSync(cli, now, now);
  return cli;
}

/**
 * A vitest sequencer that starts the files of `slowest` first, in that order, then the others as
 * vitest orders them. On a clean checkout vitest has no durations and starts the largest files
 * first: a short file that runs long (one that calls a shared suite, or spawns CLIs) then starts
 * last, and the run ends on one busy worker while the others wait.
 */
export function slowFirst(slowest: readonly string[]): new (ctx: Vitest) => TestSequencer {
  return class SlowFirst extends BaseSequencer {
    override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
      const ordered = await super.sort(files);
      const rank = (spec: TestSpecification) => {
        const at = slowest.findIndex((file) => spec.moduleId.endsWith(file));
        return at === -1 ? slowest.length : at;
      };
      return ordered
        .map((spec, index) => ({ spec, index, rank: rank(spec) }))
        .sort((a, b) => a.rank - b.rank || a.index - b.index)
        .map(({ spec }) => spec);
    }
  };
}
