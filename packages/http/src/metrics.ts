import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer as createHttpServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction, RouteOptions } from 'fastify';
import fp from 'fastify-plugin';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry, type CounterConfiguration, type GaugeConfiguration } from 'prom-client';
import { AppError } from './errors.js';
import { noRateLimit } from './server.js';

export { Counter, Gauge, type Registry };

/** Where /metrics is served and who may read it (packages/config: METRICS_TOKEN, METRICS_PORT). */
export interface MetricsOptions {
  /** A bearer token every scrape must carry; none: open to whoever reaches the route. */
  token?: string;
  /** Serve /metrics on a listener of its own at this port (0: any free port), and not on the app's. */
  port?: number;
  /** The separate listener's interface (the app's HOST). */
  host?: string;
  /** Whether the app's own port answers /metrics (false in production without a token or a port of its own). */
  onAppPort: boolean;
  /** Each database pool's size and queries in flight, read at scrape time. */
  pools?: () => { pool: string; size: number | null; inFlight: number }[];
}

export interface Metrics {
  /** The app's registry (process metrics are kept in one registry per process and added at scrape). */
  registry: Registry;
  /** The text exposition of every metric, process metrics included. */
  scrape(): Promise<string>;
  /** Runs one pass of a background job, counting it (success or failure) and timing it. */
  job<T>(name: string, run: () => Promise<T>): Promise<T>;
  /** The gauge of open WebSocket connections of one endpoint: opened() on connection, closed() on close. */
  websocket(endpoint: string): { opened(): void; closed(): void };
  counter<L extends string>(config: Omit<CounterConfiguration<L>, 'registers'>): Counter<L>;
  gauge<L extends string>(config: Omit<GaugeConfiguration<L>, 'registers'>): Gauge<L>;
  /** The separate listener's address once the app is ready (METRICS_PORT), undefined otherwise. */
  address(): AddressInfo | undefined;
}

declare module 'fastify' {
  interface FastifyInstance {
    metrics: Metrics;
  }
}

/** Upper bounds of the request latency buckets, in seconds: the API answers in milliseconds, exports in seconds. */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const JOB_BUCKETS = [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300];
const UNMATCHED = 'unmatched';

/**
 * Process metrics (event-loop lag, heap, GC, CPU, handles) once per process: they describe the
 * process, and each collector installs observers that live as long as it does (tests build many apps).
 */
let processRegistry: Registry | undefined;
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

/** One series of the request histogram (method, route, status), counted in place. */
class LatencySeries {
  readonly buckets = new Float64Array(LATENCY_BUCKETS.length);
  sum = 0;
  count = 0;
  constructor(readonly labels: { method: string; route: string; status_code: string }) {}

  observe(seconds: number) {
    this.sum += seconds;
    this.count += 1;
    for (let i = 0; i < LATENCY_BUCKETS.length; i++) {
      if (seconds <= (LATENCY_BUCKETS[i] as number)) {
        this.buckets[i] = (this.buckets[i] as number) + 1;
        return;
      }
    }
  }
}

/** A route's series by status code, created on the first answer with that status. */
class RouteSeries {
  private readonly byStatus = new Map<number, LatencySeries>();
  constructor(
    private readonly all: LatencySeries[],
    private readonly method: string,
    private readonly route: string,
  ) {}

  observe(status: number, milliseconds: number) {
    let series = this.byStatus.get(status);
    if (!series) {
      series = new LatencySeries({ method: this.method, route: this.route, status_code: String(status) });
      this.byStatus.set(status, series);
      this.all.push(series);
    }
    series.observe(milliseconds / 1000);
  }
}

/**
 * `http_request_duration_seconds`, a histogram by method, route template and status. prom-client's
 * own histogram hashes its labels on every observation; this one finds its series through the route
 * (a closure per route, a map lookup by status) and allocates nothing per request. It is read
 * through prom-client's registry like any metric (name, help, type, get()).
 */
function requestHistogram(registry: Registry) {
  const all: LatencySeries[] = [];
  const name = 'http_request_duration_seconds';
  const metric = {
    name,
    help: 'Time to answer an HTTP request, by method, route template (unmatched: no route) and status code',
    type: 'histogram',
    aggregator: 'sum',
    get: async () => ({
      name,
      help: metric.help,
      type: metric.type,
      aggregator: metric.aggregator,
      values: all.flatMap((s) => {
        let cumulative = 0;
        const buckets = LATENCY_BUCKETS.map((le, i) => {
          cumulative += s.buckets[i] as number;
          return { labels: { ...s.labels, le }, value: cumulative, metricName: `${name}_bucket` };
        });
        return [
          ...buckets,
          { labels: { ...s.labels, le: '+Inf' }, value: s.count, metricName: `${name}_bucket` },
          { labels: s.labels, value: s.sum, metricName: `${name}_sum` },
          { labels: s.labels, value: s.count, metricName: `${name}_count` },
        ];
      }),
    }),
    reset: () => {
      for (const s of all) {
        s.buckets.fill(0);
        s.sum = 0;
        s.count = 0;
      }
    },
  };
  registry.registerMetric(metric as unknown as Counter);
  return (method: string, route: string) => new RouteSeries(all, method, route);
}

const OBSERVER = Symbol('metrics.observer');
type Observer = ((request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => void) & { [OBSERVER]?: true };

function sameToken(expected: Buffer, header: string | undefined): boolean {
  if (!header?.startsWith('Bearer ')) return false;
  // Digests of equal length, so the comparison takes the same time whatever was sent.
  return timingSafeEqual(expected, createHash('sha256').update(header.slice(7)).digest());
}

/**
 * Prometheus metrics for an app: request rate and latency by route, process metrics, database pool
 * use, job runs and WebSocket connections here; each app adds its own through `app.metrics`.
 * Registered before the routes, whose latency it times from its onRoute hook.
 */
export const metricsPlugin = fp(
  async (app: FastifyInstance, options: MetricsOptions) => {
    const registry = new Registry();
    const routeSeries = requestHistogram(registry);

    // Each route gets a hook of its own bound to its series: no route lookup, no label object per
    // request. Fastify copies a GET route's options into its HEAD route, hooks included, and
    // announces both: the copied hook is replaced by the HEAD route's own.
    app.addHook('onRoute', (route: RouteOptions) => {
      const methods = Array.isArray(route.method) ? route.method : [route.method];
      const byMethod = new Map(methods.map((method) => [method, routeSeries(method, route.url)]));
      const only = methods.length === 1 ? byMethod.get(methods[0] as string) : undefined;
      const observer: Observer = only
        ? (_request, reply, done) => {
            only.observe(reply.statusCode, reply.elapsedTime);
            done();
          }
        : (request, reply, done) => {
            byMethod.get(request.method)?.observe(reply.statusCode, reply.elapsedTime);
            done();
          };
      observer[OBSERVER] = true;
      const existing = (route.onResponse === undefined ? [] : [route.onResponse].flat()) as Observer[];
      route.onResponse = [...existing.filter((hook) => !hook[OBSERVER]), observer] as RouteOptions['onResponse'];
    });
    // Requests no route matched share one series per method, whatever their URL: the label set stays bounded.
    const unmatched = new Map<string, RouteSeries>();
    app.addHook('onResponse', (request, reply, done) => {
      if (request.is404) {
        let series = unmatched.get(request.method);
        if (!series) {
          series = routeSeries(request.method, UNMATCHED);
          unmatched.set(request.method, series);
        }
        series.observe(reply.statusCode, reply.elapsedTime);
      }
      done();
    });

    const jobRuns = new Counter({
      name: 'job_runs_total',
      // `job_name`, not `job`: Prometheus gives `job` to the scrape target.
      help: 'Passes of background jobs, by job name and outcome (success, failure)',
      labelNames: ['job_name', 'outcome'] as const,
      registers: [registry],
    });
    const jobDuration = new Histogram({
      name: 'job_duration_seconds',
      help: 'Duration of background job passes, by job name',
      labelNames: ['job_name'] as const,
      buckets: JOB_BUCKETS,
      registers: [registry],
    });
    const websockets = new Gauge({
      name: 'websocket_connections',
      help: 'Open WebSocket connections, by endpoint',
      labelNames: ['endpoint'] as const,
      registers: [registry],
    });
    const pools = options.pools;
    if (pools) {
      new Gauge({
        name: 'db_pool_size',
        help: 'Connections a database pool may open (postgres.js); absent on PGlite, one embedded connection',
        labelNames: ['pool'] as const,
        registers: [registry],
        collect() {
          this.reset();
          for (const p of pools()) if (p.size !== null) this.set({ pool: p.pool }, p.size);
        },
      });
      new Gauge({
        name: 'db_queries_in_flight',
        help: 'Queries sent to a database pool and not yet answered (running or waiting for a connection)',
        labelNames: ['pool'] as const,
        registers: [registry],
        collect() {
          for (const p of pools()) this.set({ pool: p.pool }, p.inFlight);
        },
      });
    }

    const processRegistry = processMetrics();
    const scrape = async () => `${await processRegistry.metrics()}\n${await registry.metrics()}`;
    let listener: Server | undefined;

    app.decorate('metrics', {
      registry,
      scrape,
      async job(name, run) {
        const started = performance.now();
        try {
          const result = await run();
          jobRuns.inc({ job_name: name, outcome: 'success' });
          return result;
        } catch (error) {
          jobRuns.inc({ job_name: name, outcome: 'failure' });
          throw error;
        } finally {
          jobDuration.observe({ job_name: name }, (performance.now() - started) / 1000);
        }
      },
      websocket(endpoint) {
        const gauge = websockets.labels({ endpoint });
        gauge.set(0);
        return { opened: () => gauge.inc(), closed: () => gauge.dec() };
      },
      counter: (config) => new Counter({ ...config, registers: [registry] }),
      gauge: (config) => new Gauge({ ...config, registers: [registry] }),
      address: () => (listener?.address() as AddressInfo | null) ?? undefined,
    } satisfies Metrics);

    const expected = options.token ? createHash('sha256').update(options.token).digest() : undefined;

    if (options.port !== undefined) {
      // A listener of its own, reachable only where the operator opens that port (a cluster's
      // scraper), started and stopped with the app.
      const port = options.port;
      listener = createHttpServer((req, res) => {
        const path = (req.url ?? '').split('?')[0];
        if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
          res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'route_not_found', message: 'Only /metrics is served here' }));
          return;
        }
        if (expected && !sameToken(expected, req.headers.authorization)) {
          res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' }).end(JSON.stringify({ error: 'unauthenticated', message: 'A valid metrics token is required' }));
          return;
        }
        scrape().then(
          (text) => res.writeHead(200, { 'content-type': registry.contentType, 'cache-control': 'no-store' }).end(req.method === 'HEAD' ? undefined : text),
          (error: unknown) => {
            app.log.error({ err: error }, 'metrics scrape failed');
            res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'internal_error', message: 'Metrics unavailable' }));
          },
        );
      });
      // On ready (awaited, unlike onListen): a port already taken stops the start-up instead of
      // leaving the app running without its metrics.
      app.addHook('onReady', async () => {
        await new Promise<void>((resolve, reject) => {
          listener!.once('error', reject);
          listener!.listen(port, options.host, () => {
            listener!.off('error', reject);
            resolve();
          });
        });
        app.log.info({ address: listener!.address() }, 'metrics listening');
      });
      app.addHook('onClose', async () => {
        if (listener?.listening) await new Promise<void>((resolve) => listener!.close(() => resolve()));
      });
      return;
    }
    if (!options.onAppPort) {
      app.log.warn('metrics not served: set METRICS_TOKEN or METRICS_PORT to scrape them in production');
      return;
    }

    app.get(
      '/metrics',
      {
        config: noRateLimit,
        // The scrape endpoint is for operators, not a part of the API's contract.
        schema: { hide: true },
      },
      async (request, reply) => {
        if (expected && !sameToken(expected, request.headers.authorization)) {
          reply.header('www-authenticate', 'Bearer');
          throw new AppError('unauthenticated', 'A valid metrics token is required');
        }
        return reply.type(registry.contentType).send(await scrape());
      },
    );
  },
  { name: 'metrics' },
);
