// pnpm bench (marketplace): the health route's throughput and latency, the floor every route
// inherits from the shared HTTP stack (validation, envelope, request ids, CORS, rate limiting).
import { fileURLToPath } from 'node:url';
import { load, printTable, startService } from '../../../scripts/bench-lib.mjs';

const appDir = fileURLToPath(new URL('..', import.meta.url));
const databaseUrl = process.env.BENCH_DATABASE_URL;
const service = await startService(
  appDir,
  { DATA_DIR: 'memory://', ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}) },
  '/api/v1/health',
);
try {
  const result = await load({ url: `${service.base}/api/v1/health`, connections: 10, duration: Number(process.env.BENCH_SECONDS ?? 10) });
  printTable(`Marketplace bench (${databaseUrl ? 'PostgreSQL' : 'PGlite'}, node ${process.version})`, [
    ['GET /api/v1/health throughput', `${Math.round(result.requests.average)} req/s`, 'baseline'],
    ['GET /api/v1/health p50 / p97.5 / p99', `${result.latency.p50} / ${result.latency.p97_5} / ${result.latency.p99} ms`, 'baseline'],
    ['errors', `${result.errors + result.non2xx}`, '0'],
  ]);
} finally {
  await service.stop();
}
