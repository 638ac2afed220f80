import type { Metrics } from '@repo/http';
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';

/** The routes logs come in by: one entry, a batch, an OTLP export. */
export type IngestEndpoint = 'single' | 'batch' | 'otlp';
const ENDPOINTS: readonly IngestEndpoint[] = ['single', 'batch', 'otlp'];

/**
 * The ingest counters: logs stored and the requests that stored them, requests refused (any 4xx:
 * validation, size, credentials, rate limit) and OTLP records refused inside an accepted export.
 * Each endpoint's series is bound once, so counting costs no label lookup on the ingest path.
 */
export function createIngestMetrics(metrics: Pick<Metrics, 'counter'>) {
  const logs = metrics.counter({
    name: 'logtracker_logs_accepted_total',
    help: 'Log entries stored, by ingest endpoint (single, batch, otlp)',
    labelNames: ['endpoint'] as const,
  });
  const batches = metrics.counter({
    name: 'logtracker_log_batches_total',
    help: 'Ingest requests that stored logs, by ingest endpoint',
    labelNames: ['endpoint'] as const,
  });
  const refused = metrics.counter({
    name: 'logtracker_ingest_rejected_total',
    help: 'Ingest requests refused with a 4xx (validation, size, credentials, rate limit), by ingest endpoint',
    labelNames: ['endpoint'] as const,
  });
  const records = metrics.counter({
    name: 'logtracker_logs_rejected_total',
    help: 'Log records refused inside an accepted request (OTLP partial success), by ingest endpoint',
    labelNames: ['endpoint'] as const,
  });
  // Requests' entries merged into one statement when they queued for a writer (createLogWrites):
  // the two counters' ratio is how many requests a statement stored.
  const statements = metrics.counter({
    name: 'logtracker_log_insert_statements_total',
    help: 'Insert statements that stored the logs of queued requests (several requests for one project merged into one)',
  });
  const merged = metrics.counter({
    name: 'logtracker_log_insert_requests_total',
    help: 'Requests whose logs those insert statements stored',
  });
  statements.inc(0);
  merged.inc(0);
  const bound = <T>(make: (endpoint: IngestEndpoint) => T) => Object.fromEntries(ENDPOINTS.map((e) => [e, make(e)])) as Record<IngestEndpoint, T>;
  const series = bound((endpoint) => ({
    logs: logs.labels({ endpoint }),
    batches: batches.labels({ endpoint }),
    refused: refused.labels({ endpoint }),
    records: records.labels({ endpoint }),
  }));
  // Every series exists from the start: a dashboard's rate() has a zero to start from.
  for (const s of Object.values(series)) {
    s.logs.inc(0);
    s.batches.inc(0);
    s.refused.inc(0);
    s.records.inc(0);
  }
  const hooks = bound((endpoint) => {
    const counter = series[endpoint].refused;
    return (_request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
      if (reply.statusCode >= 400 && reply.statusCode < 500) counter.inc();
      done();
    };
  });

  return {
    /** `count` logs stored by one request. */
    stored(endpoint: IngestEndpoint, count: number) {
      series[endpoint].batches.inc();
      series[endpoint].logs.inc(count);
    },
    /** One insert statement stored the logs of `requests` requests (createLogWrites' onStatement). */
    statement(requests: number) {
      statements.inc();
      merged.inc(requests);
    },
    /** Records an accepted request could not store (OTLP partial success). */
    rejectedRecords(endpoint: IngestEndpoint, count: number) {
      if (count > 0) series[endpoint].records.inc(count);
    },
    /** An ingest route's onResponse hook, counting the requests it refused. */
    refusals(endpoint: IngestEndpoint) {
      return hooks[endpoint];
    },
  };
}

export type IngestMetrics = ReturnType<typeof createIngestMetrics>;
