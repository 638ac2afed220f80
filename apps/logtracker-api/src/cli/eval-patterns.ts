import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { isEntryPoint } from '@repo/config';
import { evaluateSample, formatTable, sampleName, type SampleResult } from '../modules/patterns/index.js';

/** Every labelled CSV sample in a directory and in its `more/` directory, in name order. */
export function findSamples(dir: string): string[] {
  const files: string[] = [];
  for (const folder of [dir, join(dir, 'more')]) {
    if (!existsSync(folder) || !statSync(folder).isDirectory()) continue;
    for (const file of readdirSync(folder).sort()) if (file.endsWith('.csv')) files.push(join(folder, file));
  }
  return files;
}

export function evaluateDirectory(dir: string): SampleResult[] {
  return findSamples(dir).map((file) => evaluateSample(sampleName(file), readFileSync(file, 'utf8')));
}

/**
 * Prints the template miner's grouping accuracy on labelled Loghub samples beside Drain's
 * published figures: `pnpm --filter logtracker-api eval:patterns [dir]`, the directory defaulting
 * to LOGHUB_DIR. Answers 1 when there is no sample to read.
 */
export function main(argv: string[] = process.argv.slice(2), env: Record<string, string | undefined> = process.env): number {
  const dir = argv[0] ?? env.LOGHUB_DIR;
  if (!dir) {
    process.stderr.write('Give the directory of the labelled samples as an argument or in LOGHUB_DIR\n');
    return 1;
  }
  const results = evaluateDirectory(dir);
  if (results.length === 0) {
    process.stderr.write(`No labelled CSV sample in ${dir}\n`);
    return 1;
  }
  process.stdout.write(`${formatTable(results)}\n`);
  return 0;
}

if (isEntryPoint(import.meta.url)) process.exitCode = main();
