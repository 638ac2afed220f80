import { defineConfig } from 'vite';

// The log tracker serves dist/ at / under a strict Content-Security-Policy (script-src 'self',
// style-src 'self'): nothing may be inlined into index.html, so the module-preload polyfill (an
// inline script) is off and no asset becomes a data: URL in the CSS or the scripts.
const API = process.env.LOGTRACKER_API ?? 'http://127.0.0.1:8001';

export default defineConfig({
  base: '/',
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
