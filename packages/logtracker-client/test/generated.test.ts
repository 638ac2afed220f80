import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const script = fileURLToPath(new URL('../scripts/generate.mjs', import.meta.url));
const committed = fileURLToPath(new URL('../src/generated/openapi.ts', import.meta.url));

describe('the generated client types', () => {
  it('are what the built log tracker\'s OpenAPI document gives today (run "pnpm --filter @repo/logtracker-client generate" after changing the API)', async () => {
    const regenerated = await new Promise<string>((resolve, reject) =>
      execFile(process.execPath, [script, '--stdout'], { maxBuffer: 32 * 1024 * 1024, timeout: 60_000 }, (error, stdout, stderr) =>
        error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout),
      ),
    );
    expect(regenerated).toContain('"/api/projects/{project_id}/logs/batch"');
    expect(regenerated === (await readFile(committed, 'utf8')), 'src/generated/openapi.ts differs from the document of the built app').toBe(true);
  });
});
