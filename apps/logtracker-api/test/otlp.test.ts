import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { SeverityNumber } from '@opentelemetry/api-logs';
import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BatchLogRecordProcessor,
  LoggerProvider,
  SimpleLogRecordProcessor,
  type LogRecordExporter,
} from '@opentelemetry/sdk-logs';
import { count, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { logs } from '../src/db/schema/index.js';
import { buildTestApp, createProject, createUser, expectError, type TestApp, type TestUser, type LogBody } from './helpers.js';

type ExportResult = Parameters<Parameters<LogRecordExporter['export']>[1]>[0];
type Headers = Record<string, string>;


let t: TestApp;
let small: TestApp;
let owner: TestUser;
let baseUrl: string;

beforeAll(async () => {
  t = await buildTestApp();
  small = await buildTestApp({ LOGS_BATCH_MAX_ENTRIES: '3' });
  owner = await createUser(t);
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = t.app.server.address() as AddressInfo;
  baseUrl = `http://127.0.0.1:${port}`;
});
afterAll(async () => {
  await t.close();
  await small.close();
});

/** A fresh project and an ingest key of it, so that what is read back is exactly what was sent. */
async function projectWithKey(app: TestApp = t, who?: TestUser) {
  const boss = who ?? (app === t ? owner : await createUser(app));
  const projectId = (await createProject(app, boss)).id;
  const response = await app.app.inject({
    method: 'POST',
    url: `/api/projects/${projectId}/ingest-keys`,
    headers: boss.headers,
    payload: { name: 'otel' },
  });
  expect(response.statusCode, response.body).toBe(201);
  const { id, key } = (response.json() as { data: { id: number; key: string } }).data;
  return { projectId, keyId: id, key, boss };
}

async function readLogs(projectId: number, app: TestApp = t, who: TestUser = owner) {
  const response = await app.app.inject({
    method: 'GET',
    url: `/api/projects/${projectId}/logs`,
    headers: who.headers,
    query: { per_page: '500' },
  });
  expect(response.statusCode, response.body).toBe(200);
  return (response.json() as { data: LogBody[] }).data;
}

async function countLogs(app: TestApp, projectId: number) {
  const [row] = await app.database.db.select({ n: count() }).from(logs).where(eq(logs.projectId, projectId));
  return row?.n ?? 0;
}

function byMessage(rows: LogBody[], message: string) {
  const found = rows.find((r) => r.message === message);
  if (!found) throw new Error(`no log "${message}" among ${rows.map((r) => r.message).join(', ')}`);
  return found;
}

describe('POST /v1/logs with the OpenTelemetry JS SDK over loopback', () => {
  /** A LoggerProvider shipping to the app; `results` records what the exporter reported for each export. */
  function sdk(headers: Headers, processor: 'simple' | 'batch', compression: 'none' | 'gzip' = 'none') {
    // The standard variable, read when the exporter is made: the way a deployment turns gzip on.
    vi.stubEnv('OTEL_EXPORTER_OTLP_LOGS_COMPRESSION', compression);
    const otlp = new OTLPLogExporter({ url: `${baseUrl}/v1/logs`, headers, timeoutMillis: 10_000 });
    vi.unstubAllEnvs();
    const results: ExportResult[] = [];
    let records = 0;
    const exporter: LogRecordExporter = {
      export(batch, done) {
        records += batch.length;
        otlp.export(batch, (result) => {
          results.push(result);
          done(result);
        });
      },
      shutdown: () => otlp.shutdown(),
      forceFlush: () => otlp.forceFlush(),
    };
    const provider = new LoggerProvider({
      resource: resourceFromAttributes({ 'service.name': 'checkout', 'deployment.environment': 'test' }),
      processors: [
        processor === 'simple'
          ? new SimpleLogRecordProcessor({ exporter })
          : new BatchLogRecordProcessor({ exporter, scheduledDelayMillis: 60_000 }),
      ],
    });
    return { provider, results, exported: () => records, logger: provider.getLogger('checkout-service', '1.4.0') };
  }

  it('ships records with X-Ingest-Key (simple processor): levels, message, source, context and timestamp', async () => {
    const { projectId, key } = await projectWithKey();
    const { provider, logger, results } = sdk({ 'x-ingest-key': key }, 'simple');
    const at = (ms: number) => new Date(Date.parse('2026-03-01T10:00:00.000Z') + ms);

    logger.emit({
      severityNumber: SeverityNumber.INFO,
      severityText: 'INFO',
      body: 'order placed',
      timestamp: at(123),
      attributes: {
        'order.id': 42,
        'cart.total': 19.99,
        'payment.retry': true,
        tags: ['eu', 'card'],
        customer: { tier: 'gold', id: 7 },
      },
    });
    logger.emit({ severityNumber: SeverityNumber.WARN, severityText: 'WARN', body: 'stock low', timestamp: at(1000), attributes: { sku: 'A-1' } });
    logger.emit({ severityNumber: SeverityNumber.ERROR, severityText: 'ERROR', body: 'card declined', timestamp: at(2000) });
    logger.emit({ severityNumber: SeverityNumber.DEBUG, body: 'cart recomputed', timestamp: at(3000) });
    await provider.forceFlush();
    await provider.shutdown();

    // One export per record (simple processor), each reported as ExportResultCode.SUCCESS (0).
    expect(results.map((r) => r.code)).toEqual([0, 0, 0, 0]);
    for (const r of results) expect(r.error, String(r.error)).toBeUndefined();

    const rows = await readLogs(projectId);
    expect(rows).toHaveLength(4);
    expect(rows.map((r) => r.message)).toEqual(['cart recomputed', 'card declined', 'stock low', 'order placed']);

    const placed = byMessage(rows, 'order placed');
    expect(placed).toMatchObject({ project_id: projectId, level: 'info', source: 'checkout', timestamp: '2026-03-01T10:00:00.123Z' });
    expect(placed.context).toEqual({
      'order.id': 42,
      'cart.total': 19.99,
      'payment.retry': true,
      tags: ['eu', 'card'],
      customer: { tier: 'gold', id: 7 },
      'otel.scope': 'checkout-service',
      'otel.resource': { 'deployment.environment': 'test' },
    });
    expect(Date.parse(placed.received_at)).toBeGreaterThan(Date.parse(placed.timestamp));

    expect(byMessage(rows, 'stock low')).toMatchObject({ level: 'warning', source: 'checkout', timestamp: '2026-03-01T10:00:01.000Z' });
    expect(byMessage(rows, 'stock low').context).toMatchObject({ sku: 'A-1' });
    expect(byMessage(rows, 'card declined')).toMatchObject({ level: 'error', timestamp: '2026-03-01T10:00:02.000Z' });
    expect(byMessage(rows, 'cart recomputed')).toMatchObject({ level: 'debug', timestamp: '2026-03-01T10:00:03.000Z' });
  });

  it('ships a batch with Authorization: Bearer (batch processor) and maps every severity range', async () => {
    const { projectId, key } = await projectWithKey();
    const { provider, logger, results, exported } = sdk({ authorization: `Bearer ${key}` }, 'batch');
    const cases: [SeverityNumber, string][] = [
      [SeverityNumber.TRACE, 'debug'],
      [SeverityNumber.TRACE4, 'debug'],
      [SeverityNumber.DEBUG, 'debug'],
      [SeverityNumber.DEBUG4, 'debug'],
      [SeverityNumber.INFO, 'info'],
      [SeverityNumber.INFO4, 'info'],
      [SeverityNumber.WARN, 'warning'],
      [SeverityNumber.WARN4, 'warning'],
      [SeverityNumber.ERROR, 'error'],
      [SeverityNumber.ERROR4, 'error'],
      [SeverityNumber.FATAL, 'error'],
      [SeverityNumber.FATAL4, 'error'],
    ];
    for (const [severityNumber] of cases) {
      logger.emit({ severityNumber, body: `severity ${severityNumber}`, attributes: { n: severityNumber } });
    }
    const before = Date.now();
    await provider.forceFlush();
    await provider.shutdown();

    // One request carried them all.
    expect(results.map((r) => r.code)).toEqual([0]);
    expect(results[0]?.error).toBeUndefined();
    expect(exported()).toBe(cases.length);

    const rows = await readLogs(projectId);
    expect(rows).toHaveLength(cases.length);
    for (const [severityNumber, level] of cases) {
      const row = byMessage(rows, `severity ${severityNumber}`);
      expect(row.level, `severity ${severityNumber}`).toBe(level);
      expect(row.source).toBe('checkout');
      expect(row.context).toMatchObject({ n: severityNumber });
      // No explicit timestamp: the SDK stamps the record when emitted.
      expect(Date.parse(row.timestamp)).toBeLessThanOrEqual(before);
      expect(Date.parse(row.timestamp)).toBeGreaterThan(before - 60_000);
    }
  });

  it('ships gzip-compressed exports (OTEL_EXPORTER_OTLP_LOGS_COMPRESSION=gzip)', async () => {
    const { projectId, key } = await projectWithKey();
    const { provider, logger, results } = sdk({ 'x-ingest-key': key }, 'batch', 'gzip');
    for (let i = 0; i < 50; i++) {
      logger.emit({ severityNumber: SeverityNumber.INFO, body: `compressed ${i}`, attributes: { i } });
    }
    await provider.forceFlush();
    await provider.shutdown();
    expect(results.map((r) => r.code)).toEqual([0]);
    expect(results[0]?.error, String(results[0]?.error)).toBeUndefined();
    const rows = await readLogs(projectId);
    expect(rows).toHaveLength(50);
    expect(byMessage(rows, 'compressed 49')).toMatchObject({ level: 'info', source: 'checkout', context: { i: 49 } });
  });

  it('reports a failed export to the SDK when the key is revoked, and stores nothing', async () => {
    const { projectId, keyId, key } = await projectWithKey();
    const revoked = await t.app.inject({
      method: 'DELETE',
      url: `/api/projects/${projectId}/ingest-keys/${keyId}`,
      headers: owner.headers,
    });
    expect(revoked.statusCode).toBe(200);
    const { provider, logger, results } = sdk({ 'x-ingest-key': key }, 'simple');
    logger.emit({ severityNumber: SeverityNumber.ERROR, body: 'lost' });
    await provider.forceFlush();
    await provider.shutdown();
    expect(results.map((r) => r.code)).toEqual([1]); // ExportResultCode.FAILED
    expect(results[0]?.error).toBeInstanceOf(Error);
    expect(results[0]?.error).toMatchObject({ code: 401 });
    expect(await countLogs(t, projectId)).toBe(0);
  });
});

describe('POST /v1/logs with raw OTLP/JSON', () => {
  const str = (value: string) => ({ stringValue: value });

  function exportRequest(records: object[], serviceName: string | null = 'raw-service', scope = 'raw-scope') {
    return {
      resourceLogs: [
        {
          resource: { attributes: serviceName === null ? [] : [{ key: 'service.name', value: str(serviceName) }] },
          scopeLogs: [{ scope: { name: scope }, logRecords: records }],
        },
      ],
    };
  }

  function send(payload: unknown, headers: Headers, app: TestApp = t, contentType = 'application/json') {
    return app.app.inject({
      method: 'POST',
      url: '/v1/logs',
      headers: { ...headers, 'content-type': contentType },
      payload: typeof payload === 'string' || Buffer.isBuffer(payload) ? payload : JSON.stringify(payload),
    });
  }

  describe('happy path', () => {
    it('answers {} on full success and stores the records', async () => {
      const { projectId, key } = await projectWithKey();
      const response = await send(
        exportRequest([
          { timeUnixNano: '1767323045250000000', severityNumber: 9, severityText: 'INFO', body: str('job started') },
          { timeUnixNano: '1767323046000000000', severityNumber: 17, body: str('job failed') },
        ]),
        { 'x-ingest-key': key },
      );
      expect(response.statusCode, response.body).toBe(200);
      expect(response.json()).toEqual({});
      const rows = await readLogs(projectId);
      expect(rows.map((r) => [r.message, r.level, r.source, r.timestamp])).toEqual([
        ['job failed', 'error', 'raw-service', '2026-01-02T03:04:06.000Z'],
        ['job started', 'info', 'raw-service', '2026-01-02T03:04:05.250Z'],
      ]);
      expect(rows[0]?.context).toEqual({ 'otel.scope': 'raw-scope' });
    });

    it('answers {} to an empty export and stores nothing', async () => {
      const { projectId, key } = await projectWithKey();
      for (const payload of [{}, { resourceLogs: [] }, { resourceLogs: [{ scopeLogs: [{ logRecords: [] }] }] }]) {
        const response = await send(payload, { authorization: `Bearer ${key}` });
        expect(response.statusCode, response.body).toBe(200);
        expect(response.json()).toEqual({});
      }
      expect(await countLogs(t, projectId)).toBe(0);
    });

    it('answers partialSuccess for a record without a body and stores the good one', async () => {
      const { projectId, key } = await projectWithKey();
      const response = await send(
        exportRequest([
          { severityNumber: 13, body: str('kept') },
          { severityNumber: 13, attributes: [{ key: 'why', value: str('no body') }] },
        ]),
        { 'x-ingest-key': key },
      );
      expect(response.statusCode, response.body).toBe(200);
      const body = response.json() as { partialSuccess: { rejectedLogRecords: number; errorMessage: string } };
      expect(body).toEqual({ partialSuccess: { rejectedLogRecords: 1, errorMessage: expect.any(String) } });
      expect(body.partialSuccess.errorMessage).toMatch(/body/);
      const rows = await readLogs(projectId);
      expect(rows.map((r) => [r.message, r.level])).toEqual([['kept', 'warning']]);
    });

    it('counts every record it rejects: empty body, time out of range, bad time', async () => {
      const { projectId, key } = await projectWithKey();
      const response = await send(
        exportRequest([
          { body: str('') },
          { body: str('too late'), timeUnixNano: '4200000000000000000' },
          { body: str('not a time'), timeUnixNano: 'yesterday' },
          { body: str('fine') },
        ]),
        { 'x-ingest-key': key },
      );
      expect(response.statusCode, response.body).toBe(200);
      expect((response.json() as { partialSuccess: { rejectedLogRecords: number } }).partialSuccess.rejectedLogRecords).toBe(3);
      expect((await readLogs(projectId)).map((r) => r.message)).toEqual(['fine']);
    });

    it('maps severityNumber given as the enum name, and severityText when there is no number', async () => {
      const { projectId, key } = await projectWithKey();
      const cases: [object, string][] = [
        [{ severityNumber: 'SEVERITY_NUMBER_TRACE' }, 'debug'],
        [{ severityNumber: 'SEVERITY_NUMBER_DEBUG2' }, 'debug'],
        [{ severityNumber: 'SEVERITY_NUMBER_INFO' }, 'info'],
        [{ severityNumber: 'SEVERITY_NUMBER_INFO4' }, 'info'],
        [{ severityNumber: 'SEVERITY_NUMBER_WARN' }, 'warning'],
        [{ severityNumber: 'SEVERITY_NUMBER_WARN3' }, 'warning'],
        [{ severityNumber: 'SEVERITY_NUMBER_ERROR' }, 'error'],
        [{ severityNumber: 'SEVERITY_NUMBER_FATAL4' }, 'error'],
        [{ severityNumber: 'SEVERITY_NUMBER_UNSPECIFIED', severityText: 'Warning' }, 'warning'],
        [{ severityText: 'CRITICAL' }, 'error'],
        [{ severityText: 'trace' }, 'debug'],
        [{}, 'info'],
      ];
      const response = await send(
        exportRequest(cases.map(([severity], i) => ({ ...severity, body: str(`case ${i}`) }))),
        { 'x-ingest-key': key },
      );
      expect(response.statusCode, response.body).toBe(200);
      expect(response.json()).toEqual({});
      const rows = await readLogs(projectId);
      cases.forEach(([severity, level], i) => {
        expect(byMessage(rows, `case ${i}`).level, JSON.stringify(severity)).toBe(level);
      });
    });

    it('takes timeUnixNano as a string or a number, and falls back to observedTimeUnixNano then to the time received', async () => {
      const { projectId, key } = await projectWithKey();
      const before = Date.now();
      const response = await send(
        exportRequest([
          { body: str('as string'), timeUnixNano: '1767323045250000000' },
          { body: str('as number'), timeUnixNano: 1767323045250000000 },
          { body: str('as small number'), timeUnixNano: 1700000000000000000 },
          { body: str('observed'), timeUnixNano: '0', observedTimeUnixNano: '1767323050000000000' },
          { body: str('no time') },
        ]),
        { 'x-ingest-key': key },
      );
      const after = Date.now();
      expect(response.statusCode, response.body).toBe(200);
      expect(response.json()).toEqual({});
      const rows = await readLogs(projectId);
      expect(byMessage(rows, 'as string').timestamp).toBe('2026-01-02T03:04:05.250Z');
      expect(byMessage(rows, 'as number').timestamp).toBe('2026-01-02T03:04:05.250Z');
      expect(byMessage(rows, 'as small number').timestamp).toBe('2023-11-14T22:13:20.000Z');
      expect(byMessage(rows, 'observed').timestamp).toBe('2026-01-02T03:04:10.000Z');
      const untimed = byMessage(rows, 'no time');
      expect(untimed.timestamp).toBe(untimed.received_at);
      expect(Date.parse(untimed.timestamp)).toBeGreaterThanOrEqual(before);
      expect(Date.parse(untimed.timestamp)).toBeLessThanOrEqual(after);
    });

    it('decodes kvlist, array and scalar attribute values into context, and a structured body into the message', async () => {
      const { projectId, key } = await projectWithKey();
      const response = await send(
        {
          resourceLogs: [
            {
              resource: {
                attributes: [
                  { key: 'service.name', value: str('billing') },
                  { key: 'host.name', value: str('node-1') },
                ],
              },
              scopeLogs: [
                {
                  scope: { name: 'billing.worker', version: '2.0.0' },
                  logRecords: [
                    {
                      severityNumber: 17,
                      body: str('charge failed'),
                      traceId: '5b8efff798038103d269b633813fc60c',
                      spanId: 'eee19b7ec3c1b174',
                      attributes: [
                        {
                          key: 'customer',
                          value: {
                            kvlistValue: {
                              values: [
                                { key: 'id', value: { intValue: '42' } },
                                { key: 'vip', value: { boolValue: true } },
                                {
                                  key: 'address',
                                  value: { kvlistValue: { values: [{ key: 'country', value: str('FR') }] } },
                                },
                              ],
                            },
                          },
                        },
                        {
                          key: 'attempts',
                          value: {
                            arrayValue: {
                              values: [{ intValue: 1 }, { doubleValue: 2.5 }, str('three'), { arrayValue: { values: [] } }],
                            },
                          },
                        },
                        { key: 'ratio', value: { doubleValue: 0.25 } },
                        { key: 'big', value: { intValue: '9007199254740993' } },
                        { key: 'raw', value: { bytesValue: 'AQID' } },
                        { key: 'empty', value: {} },
                      ],
                    },
                    {
                      severityNumber: 9,
                      body: { kvlistValue: { values: [{ key: 'event', value: str('refund') }, { key: 'amount', value: { intValue: 500 } }] } },
                    },
                  ],
                },
              ],
            },
          ],
        },
        { 'x-ingest-key': key },
      );
      expect(response.statusCode, response.body).toBe(200);
      expect(response.json()).toEqual({});
      const rows = await readLogs(projectId);
      const failed = byMessage(rows, 'charge failed');
      expect(failed.source).toBe('billing');
      expect(failed.context).toEqual({
        customer: { id: 42, vip: true, address: { country: 'FR' } },
        attempts: [1, 2.5, 'three', []],
        ratio: 0.25,
        big: '9007199254740993',
        raw: 'AQID',
        empty: null,
        trace_id: '5b8efff798038103d269b633813fc60c',
        span_id: 'eee19b7ec3c1b174',
        'otel.scope': 'billing.worker',
        'otel.resource': { 'host.name': 'node-1' },
      });
      const structured = rows.find((r) => r.level === 'info');
      expect(structured?.message).toBeDefined();
      expect(JSON.parse(structured?.message ?? 'null')).toEqual({ event: 'refund', amount: 500 });
    });

    it('uses the scope name as source when the resource has no service.name', async () => {
      const { projectId, key } = await projectWithKey();
      const response = await send(exportRequest([{ body: str('anonymous') }], null, 'my.scope'), { 'x-ingest-key': key });
      expect(response.statusCode, response.body).toBe(200);
      expect((await readLogs(projectId))[0]).toMatchObject({ message: 'anonymous', source: 'my.scope' });
    });
  });

  describe('errors', () => {
    it('answers 400 bad_request for malformed JSON, and stores nothing', async () => {
      const { projectId, key } = await projectWithKey();
      expectError(await send('{"resourceLogs": [', { 'x-ingest-key': key }), 400, 'bad_request');
      expect(await countLogs(t, projectId)).toBe(0);
    });

    it('takes a gzip-compressed body (Content-Encoding: gzip)', async () => {
      const { projectId, key } = await projectWithKey();
      const response = await t.app.inject({
        method: 'POST',
        url: '/v1/logs',
        headers: { 'x-ingest-key': key, 'content-type': 'application/json', 'content-encoding': 'gzip' },
        payload: gzipSync(JSON.stringify(exportRequest([{ severityNumber: 13, body: str('zipped') }]))),
      });
      expect(response.statusCode, response.body).toBe(200);
      expect(response.json()).toEqual({});
      expect((await readLogs(projectId)).map((r) => [r.message, r.level])).toEqual([['zipped', 'warning']]);
    });

    it('answers 400 bad_request for a body that is not gzip though it says so, or an encoding it does not take', async () => {
      const { projectId, key } = await projectWithKey();
      const json = JSON.stringify(exportRequest([{ body: str('plain') }]));
      const lying = await t.app.inject({
        method: 'POST',
        url: '/v1/logs',
        headers: { 'x-ingest-key': key, 'content-type': 'application/json', 'content-encoding': 'gzip' },
        payload: json,
      });
      expectError(lying, 400, 'bad_request');
      const brotli = await t.app.inject({
        method: 'POST',
        url: '/v1/logs',
        headers: { 'x-ingest-key': key, 'content-type': 'application/json', 'content-encoding': 'br' },
        payload: json,
      });
      expectError(brotli, 400, 'bad_request');
      expect(await countLogs(t, projectId)).toBe(0);
    });

    it('answers 413 when a small gzip body inflates beyond the size limit', async () => {
      const { projectId, key } = await projectWithKey();
      const huge = JSON.stringify(exportRequest([{ body: str('a'.repeat(t.config.logs.batchMaxBytes + 1)) }]));
      const payload = gzipSync(huge);
      expect(payload.length).toBeLessThan(t.config.logs.batchMaxBytes / 100);
      const response = await t.app.inject({
        method: 'POST',
        url: '/v1/logs',
        headers: { 'x-ingest-key': key, 'content-type': 'application/json', 'content-encoding': 'gzip' },
        payload,
      });
      expectError(response, 413, 'payload_too_large');
      expect(await countLogs(t, projectId)).toBe(0);
    });

    it.each([
      ['an object', { resourceLogs: { scopeLogs: [] } }],
      ['a string', { resourceLogs: 'logs' }],
      ['null', { resourceLogs: null }],
    ])('answers 422 on resourceLogs when it is %s', async (_what, payload) => {
      const { key } = await projectWithKey();
      const error = expectError(await send(payload, { 'x-ingest-key': key }), 422, 'validation_error');
      expect(Object.keys(error.errors ?? {})).toEqual(['resourceLogs']);
    });

    it('answers 422 naming the path of a record of the wrong shape', async () => {
      const { projectId, key } = await projectWithKey();
      const error = expectError(
        await send(exportRequest([{ body: str('ok') }, { body: str('bad'), attributes: 'not-a-list' }]), { 'x-ingest-key': key }),
        422,
        'validation_error',
      );
      expect(Object.keys(error.errors ?? {})).toEqual(['resourceLogs.0.scopeLogs.0.logRecords.1.attributes']);
      expect(await countLogs(t, projectId)).toBe(0);
    });

    it('answers 413 beyond LOGS_BATCH_MAX_ENTRIES records, counted across resources, and stores nothing', async () => {
      const { projectId, key, boss } = await projectWithKey(small);
      const records = (n: number, tag: string) => Array.from({ length: n }, (_, i) => ({ body: str(`${tag} ${i}`) }));

      const ok = await send(exportRequest(records(3, 'fits')), { 'x-ingest-key': key }, small);
      expect(ok.statusCode, ok.body).toBe(200);
      expect(await countLogs(small, projectId)).toBe(3);

      expectError(await send(exportRequest(records(4, 'too many')), { 'x-ingest-key': key }, small), 413, 'payload_too_large');
      const split = exportRequest(records(2, 'split a'));
      split.resourceLogs.push(...exportRequest(records(2, 'split b')).resourceLogs);
      expectError(await send(split, { 'x-ingest-key': key }, small), 413, 'payload_too_large');
      // Rejected records count too.
      expectError(
        await send(exportRequest([...records(3, 'with bad'), { severityNumber: 9 }]), { 'x-ingest-key': key }, small),
        413,
        'payload_too_large',
      );
      expect(await countLogs(small, projectId)).toBe(3);
      expect((await readLogs(projectId, small, boss)).every((r) => r.message.startsWith('fits'))).toBe(true);
    });
  });

  describe('security', () => {
    it('answers 403 forbidden to a user token, even the owner’s, and stores nothing', async () => {
      const { projectId } = await projectWithKey();
      const error = expectError(await send(exportRequest([{ body: str('by a user') }]), owner.headers), 403, 'forbidden');
      expect(error.message).toMatch(/ingest key/i);
      expect(await countLogs(t, projectId)).toBe(0);
    });

    it('answers 401 without credentials, with a bad token, or with an unknown key', async () => {
      const payload = exportRequest([{ body: str('anonymous') }]);
      expectError(await send(payload, {}), 401, 'unauthenticated');
      expectError(await send(payload, { authorization: 'Bearer not.a.jwt' }), 401, 'unauthenticated');
      expectError(await send(payload, { 'x-ingest-key': `ltk_${'x'.repeat(43)}` }), 401, 'unauthenticated');
      expectError(await send(payload, { authorization: `Bearer ltk_${'x'.repeat(43)}` }), 401, 'unauthenticated');
    });

    it('answers 401 before reading the body when there are no credentials', async () => {
      expectError(await send('{"resourceLogs": [', {}), 401, 'unauthenticated');
    });

    it('answers 401 at once for a revoked key', async () => {
      const { projectId, keyId, key } = await projectWithKey();
      const payload = exportRequest([{ body: str('before revocation') }]);
      expect((await send(payload, { 'x-ingest-key': key })).statusCode).toBe(200);
      const revoked = await t.app.inject({
        method: 'DELETE',
        url: `/api/projects/${projectId}/ingest-keys/${keyId}`,
        headers: owner.headers,
      });
      expect(revoked.statusCode).toBe(200);
      expectError(await send(payload, { 'x-ingest-key': key }), 401, 'unauthenticated');
      expectError(await send(payload, { authorization: `Bearer ${key}` }), 401, 'unauthenticated');
      expect(await countLogs(t, projectId)).toBe(1);
    });

    it("stores records in the key's own project only", async () => {
      const mine = await projectWithKey();
      const other = await projectWithKey();
      expect((await send(exportRequest([{ body: str('mine') }]), { 'x-ingest-key': mine.key })).statusCode).toBe(200);
      expect(await countLogs(t, mine.projectId)).toBe(1);
      expect(await countLogs(t, other.projectId)).toBe(0);
    });
  });
});
