import { randomBytes } from 'node:crypto';
import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ROOT_CONTEXT, trace, TraceFlags } from '@opentelemetry/api';
import type { LogAttributes, LogBody as OtelBody, SeverityNumber } from '@opentelemetry/api-logs';
import { OTLPLogExporter as JsonLogExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { OTLPLogExporter as ProtoLogExporter } from '@opentelemetry/exporter-logs-otlp-proto';
import { CompressionAlgorithm } from '@opentelemetry/otlp-exporter-base';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchLogRecordProcessor, LoggerProvider, type LogRecordExporter } from '@opentelemetry/sdk-logs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from './helpers.js';
import type { LogBody } from './helpers.js';
import { projectWithKey, readAllLogs } from './otlp-support.js';

type ExportResult = Parameters<Parameters<LogRecordExporter['export']>[1]>[0];

const RECORDS = 1_000;
const FIRST_SECOND = Date.parse('2026-03-01T10:00:00.000Z') / 1000;
const LEVEL_OF_RANGE = ['debug', 'debug', 'info', 'warning', 'error', 'error'];
const TEXT_OF_RANGE = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'FATAL'];

let t: TestApp;
let appUrl: string;
let proxy: Server;
let proxyUrl: string;
/** The headers of each export request, as the exporters sent them. */
const seen: IncomingHttpHeaders[] = [];

beforeAll(async () => {
  t = await buildTestApp();
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  appUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  // A pass-through between the exporters and the app, to see what each exporter really sends.
  proxy = createServer((incoming, outgoing) => {
    seen.push(incoming.headers);
    const forward = httpRequest(`${appUrl}${incoming.url}`, { method: incoming.method, headers: incoming.headers }, (answer) => {
      outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(outgoing);
    });
    incoming.pipe(forward);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => proxy.close(resolve));
  await t.close();
});

interface Sent {
  body: OtelBody;
  severityNumber: SeverityNumber;
  attributes: LogAttributes;
  traceId: string;
  spanId: string;
  second: number;
}

/** Record i: every kind of value OTLP carries, text beyond ASCII, and a trace and span of its own. */
function record(i: number): Sent {
  return {
    // Every tenth body is structured (a kvlist), the others text with accents, CJK, emoji and lines.
    body: i % 10 === 0 ? { event: 'checkout', step: i, ok: i % 20 === 0 } : `record ${i}: café ✓ 日本 😀\nsecond line`,
    severityNumber: ((i % 24) + 1) as SeverityNumber,
    attributes: {
      'record.index': i,
      'user.name': `user-${i}`,
      ratio: i / 8,
      even: i % 2 === 0,
      big: 2 ** 40 + i,
      tags: ['otlp', `t${i % 7}`],
      nested: { depth: { n: i, label: 'naïve' } },
      raw: new Uint8Array([1, 2, 3, i % 256]),
    },
    traceId: randomBytes(16).toString('hex'),
    spanId: randomBytes(8).toString('hex'),
    second: FIRST_SECOND + i,
  };
}

/** What the API reads back for a record: the same data in its own shape. */
function expected(sent: Sent, i: number) {
  const range = Math.floor(i % 24 / 4);
  const { raw, ...attributes } = sent.attributes as { raw: Uint8Array } & Record<string, unknown>;
  return {
    level: LEVEL_OF_RANGE[range],
    message: typeof sent.body === 'string' ? sent.body : JSON.stringify(sent.body),
    source: 'exporter-test',
    // The record's nanoseconds (…250 123 456) are kept to the millisecond, as the database keeps them.
    timestamp: new Date(sent.second * 1000 + 250).toISOString(),
    context: {
      ...attributes,
      raw: Buffer.from(raw).toString('base64'),
      trace_id: sent.traceId,
      span_id: sent.spanId,
      'otel.scope': 'otlp-exporters',
      'otel.resource': { 'deployment.environment': 'test', 'host.name': 'node-1' },
    },
  };
}

describe.each([
  ['http/json', 'none'],
  ['http/json', 'gzip'],
  ['http/protobuf', 'none'],
  ['http/protobuf', 'gzip'],
] as const)('POST /v1/logs from the SDK exporter %s, compression %s', (protocol, compression) => {
  it(`stores ${RECORDS} records exactly as they were emitted: bodies, severity, attributes, trace ids, times`, async () => {
    const { projectId, key, owner } = await projectWithKey(t);
    const config = {
      url: `${proxyUrl}/v1/logs`,
      headers: { 'x-ingest-key': key },
      compression: compression === 'gzip' ? CompressionAlgorithm.GZIP : CompressionAlgorithm.NONE,
      timeoutMillis: 20_000,
    };
    const otlp = protocol === 'http/json' ? new JsonLogExporter(config) : new ProtoLogExporter(config);
    const results: ExportResult[] = [];
    const exporter: LogRecordExporter = {
      export: (batch, done) =>
        otlp.export(batch, (result) => {
          results.push(result);
          done(result);
        }),
      shutdown: () => otlp.shutdown(),
      forceFlush: () => otlp.forceFlush(),
    };
    const provider = new LoggerProvider({
      resource: resourceFromAttributes({ 'service.name': 'exporter-test', 'deployment.environment': 'test', 'host.name': 'node-1' }),
      processors: [new BatchLogRecordProcessor({ exporter, maxQueueSize: RECORDS, scheduledDelayMillis: 60_000 })],
    });
    const logger = provider.getLogger('otlp-exporters', '1.0.0');
    const sent = Array.from({ length: RECORDS }, (_, i) => record(i));
    const before = seen.length;
    sent.forEach((r, i) => {
      logger.emit({
        body: r.body,
        severityNumber: r.severityNumber,
        severityText: TEXT_OF_RANGE[Math.floor(i % 24 / 4)],
        attributes: r.attributes,
        timestamp: [r.second, 250_123_456],
        context: trace.setSpanContext(ROOT_CONTEXT, { traceId: r.traceId, spanId: r.spanId, traceFlags: TraceFlags.SAMPLED }),
      });
    });
    await provider.forceFlush();
    await provider.shutdown();

    // The default batch size is 512: two requests, both a full success to the exporter.
    expect(results.map((r) => [r.code, r.error])).toEqual([
      [0, undefined],
      [0, undefined],
    ]);
    const requests = seen.slice(before);
    expect(requests).toHaveLength(2);
    for (const headers of requests) {
      expect(headers['content-type']).toBe(protocol === 'http/json' ? 'application/json' : 'application/x-protobuf');
      expect(headers['content-encoding']).toBe(compression === 'gzip' ? 'gzip' : undefined);
    }

    const rows = await readAllLogs(t, owner, projectId);
    expect(rows).toHaveLength(RECORDS);
    const byMessage = new Map<string, LogBody>(rows.map((row) => [row.message, row]));
    expect(byMessage.size).toBe(RECORDS);
    sent.forEach((r, i) => {
      const want = expected(r, i);
      const row = byMessage.get(want.message);
      expect(row && { level: row.level, message: row.message, source: row.source, timestamp: row.timestamp, context: row.context }, `record ${i}`).toEqual(want);
    });
  });
});
