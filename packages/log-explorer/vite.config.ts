import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { defineConfig, type Plugin } from 'vite';

/**
 * Gzip and brotli copies beside each text file of the build (`index.js.gz`, `index.js.br`): the log
 * tracker sends the one a browser accepts (@fastify/static's preCompressed), compressed once at
 * build time at the highest levels instead of on every request.
 */
function precompressed(): Plugin {
  let outDir = 'dist';
  return {
    name: 'precompressed',
    apply: 'build',
    configResolved(config) {
      outDir = config.build.outDir;
    },
    closeBundle() {
      const walk = (dir: string): string[] =>
        readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)]));
      for (const file of walk(outDir).filter((f) => /\.(html|js|css|svg|json)$/.test(f))) {
        const body = readFileSync(file);
        writeFileSync(`${file}.gz`, gzipSync(body, { level: 9 }));
        writeFileSync(`${file}.br`, brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }));
      }
    },
  };
}

// The log tracker serves dist/ at / under a strict Content-Security-Policy (script-src 'self',
// style-src 'self'): nothing may be inlined into index.html, so the module-preload polyfill (an
// inline script) is off and no asset becomes a data: URL in the CSS or the scripts.
const API = process.env.LOGTRACKER_API ?? 'http://127.0.0.1:8001';

export default defineConfig({
  base: '/',
  plugins: [precompressed()],
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    target: 'es2022',
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    sourcemap: false,
  },
  server: {
    host: '127.0.0.1',
    proxy: { '/api': { target: API, changeOrigin: false, ws: true } },
  },
});
