import { gzipSync } from 'node:zlib';
import { SeverityNumber, type LogRecord } from '@opentelemetry/api-logs';
import { ProtobufLogsSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { InMemoryLogRecordExporter, LoggerProvider, SimpleLogRecordProcessor } from '@opentelemetry/sdk-logs';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, expectError, type TestApp } from './helpers.js';
import { countLogs, decodeStatus, projectWithKey, readAllLogs } from './otlp-support.js';

const PROTOBUF = 'application/x-protobuf';

let t: TestApp;

beforeAll(async () => {
  t = await buildTestApp();
});
afterAll(async () => {
  await t.close();
});

/** An ExportLogsServiceRequest as the SDK's own protobuf serializer writes it. */
async function protobufExport(records: LogRecord[], resource: Record<string, string> = { 'service.name': 'proto-service' }) {
  const memory = new InMemoryLogRecordExporter();
  const provider = new LoggerProvider({
    resource: resourceFromAttributes(resource),
    processors: [new SimpleLogRecordProcessor({ exporter: memory })],
  });
  const logger = provider.getLogger('proto-scope');
  for (const record of records) logger.emit(record);
  await provider.forceFlush();
  const bytes = ProtobufLogsSerializer.serializeRequest(memory.getFinishedLogRecords());
  await provider.shutdown();
  if (!bytes) throw new Error('the serializer wrote nothing');
  return Buffer.from(bytes);
}

function post(payload: Buffer | string, headers: Record<string, string>) {
  return t.app.inject({ method: 'POST', url: '/v1/logs', headers, payload });
}

/** The google.rpc.Status a protobuf request's error is answered with. */
function expectStatus(response: LightMyRequestResponse, httpStatus: number, rpcCode: number) {
  expect(response.statusCode, response.body).toBe(httpStatus);
  expect(response.headers['content-type']).toBe(PROTOBUF);
  const status = decodeStatus(response.rawPayload);
  expect(status.code).toBe(rpcCode);
  expect(status.message).not.toBe('');
  return status;
}

/** A length-delimited protobuf field, to write bytes the SDK would never send. */
function field(number: number, bytes: Uint8Array): Buffer {
  const length: number[] = [];
  for (let n = bytes.length; ; n >>>= 7) {
    if (n < 0x80) {
      length.push(n);
      break;
    }
    length.push((n & 0x7f) | 0x80);
  }
  return Buffer.concat([Buffer.from([(number << 3) | 2, ...length]), bytes]);
}
/** ExportLogsServiceRequest with one LogRecord made of `record` (its encoded fields). */
const oneRecord = (record: Uint8Array) => field(1, field(2, field(2, record)));

describe('POST /v1/logs: encodings, media types and unstorable text', () => {
  describe('happy path', () => {
    it('answers an empty ExportLogsServiceResponse in protobuf and stores the records, gzip or not', async () => {
      const { projectId, key, owner } = await projectWithKey(t);
      const payload = await protobufExport([
        { severityNumber: SeverityNumber.WARN, body: 'plain', timestamp: new Date('2026-01-02T03:04:05.250Z') },
      ]);
      const plain = await post(payload, { 'x-ingest-key': key, 'content-type': PROTOBUF });
      expect(plain.statusCode, plain.body).toBe(200);
      expect(plain.headers['content-type']).toBe(PROTOBUF);
      expect(plain.rawPayload).toHaveLength(0);
      expect(ProtobufLogsSerializer.deserializeResponse(plain.rawPayload)).toEqual({});

      const zipped = await post(gzipSync(await protobufExport([{ severityNumber: SeverityNumber.ERROR, body: 'zipped' }])), {
        'x-ingest-key': key,
        'content-type': PROTOBUF,
        'content-encoding': 'gzip',
      });
      expect(zipped.statusCode, zipped.body).toBe(200);
      expect(zipped.headers['content-type']).toBe(PROTOBUF);

      const rows = await readAllLogs(t, owner, projectId);
      expect(rows.map((r) => [r.message, r.level, r.source])).toEqual(
        expect.arrayContaining([
          ['plain', 'warning', 'proto-service'],
          ['zipped', 'error', 'proto-service'],
        ]),
      );
      expect(rows).toHaveLength(2);
      expect(rows.find((r) => r.message === 'plain')?.timestamp).toBe('2026-01-02T03:04:05.250Z');
    });

    it('takes Content-Type parameters (application/json; charset=utf-8) and answers JSON to JSON', async () => {
      const { key } = await projectWithKey(t);
      const response = await post(JSON.stringify({ resourceLogs: [] }), {
        'x-ingest-key': key,
        'content-type': 'Application/JSON; charset=utf-8',
      });
      expect(response.statusCode, response.body).toBe(200);
      expect(response.headers['content-type']).toMatch(/^application\/json/);
      expect(response.json()).toEqual({});
    });
  });

  describe('text PostgreSQL cannot store', () => {
    it('protobuf: refuses each record with a NUL in its body or attributes, counts it in partialSuccess, stores the rest', async () => {
      const { projectId, key, owner } = await projectWithKey(t);
      const payload = await protobufExport([
        { body: 'kept', attributes: { note: 'fine' } },
        { body: 'nul\u0000in the body' },
        { body: 'nul in a value', attributes: { user: 'a\u0000b' } },
        { body: 'nul in a key', attributes: { 'us\u0000er': 'x' } },
        { body: { nested: ['deep\u0000'] } },
        { body: 'also kept' },
      ]);
      const response = await post(payload, { 'x-ingest-key': key, 'content-type': PROTOBUF });
      expect(response.statusCode, response.body).toBe(200);
      expect(response.headers['content-type']).toBe(PROTOBUF);
      const { partialSuccess } = ProtobufLogsSerializer.deserializeResponse(response.rawPayload);
      expect(partialSuccess?.rejectedLogRecords).toBe(4);
      expect(partialSuccess?.errorMessage).toMatch(/NUL character or an unpaired UTF-16 surrogate at body/);
      expect(partialSuccess?.errorMessage).toContain('attributes.user');
      expect(partialSuccess?.errorMessage).toContain('attributes.us\uFFFDer');
      expect(partialSuccess?.errorMessage).toContain('body.nested.0');
      const rows = await readAllLogs(t, owner, projectId);
      expect(rows.map((r) => r.message).sort()).toEqual(['also kept', 'kept']);
    });

    it('protobuf: refuses every record of a resource whose attributes hold a NUL, and keeps the other resources', async () => {
      const { projectId, key, owner } = await projectWithKey(t);
      const bad = await protobufExport([{ body: 'one' }, { body: 'two' }], { 'service.name': 'svc', 'host.name': 'h\u0000st' });
      const response = await post(bad, { 'x-ingest-key': key, 'content-type': PROTOBUF });
      expect(response.statusCode, response.body).toBe(200);
      const { partialSuccess } = ProtobufLogsSerializer.deserializeResponse(response.rawPayload);
      expect(partialSuccess?.rejectedLogRecords).toBe(2);
      expect(partialSuccess?.errorMessage).toContain('resource.host.name');
      expect(await countLogs(t, projectId)).toBe(0);

      const good = await post(await protobufExport([{ body: 'three' }]), { 'x-ingest-key': key, 'content-type': PROTOBUF });
      expect(good.statusCode, good.body).toBe(200);
      expect((await readAllLogs(t, owner, projectId)).map((r) => r.message)).toEqual(['three']);
    });

    it('JSON: refuses each record with an unpaired surrogate or a NUL anywhere in its text, never a 500', async () => {
      const { projectId, key, owner } = await projectWithKey(t);
      const str = (value: string) => ({ stringValue: value });
      const scope = (name: string, bodies: object[]) => ({ scope: { name }, logRecords: bodies });
      const request = {
        resourceLogs: [
          {
            resource: { attributes: [{ key: 'service.name', value: str('json-service') }] },
            scopeLogs: [
              scope('fine', [
                { body: str('kept') },
                { body: str('x\ud800y') },
                { body: str('low \udc00 alone') },
                { body: str('in a value'), attributes: [{ key: 'user', value: str('x\ud800y') }] },
                { body: str('in a key'), attributes: [{ key: 'k\udbffey', value: str('v') }] },
                { body: str('in a list'), attributes: [{ key: 'l', value: { arrayValue: { values: [str('ok'), str('n\u0000l')] } } }] },
                { body: { kvlistValue: { values: [{ key: 'msg', value: str('x\ud800') }] } } },
                { body: str('in the trace id'), traceId: '\u0000' },
                { body: str('a pair is fine: 😀 \ud83d\ude00') },
              ]),
              scope('bad\ud800scope', [{ body: str('under a bad scope') }]),
            ],
          },
          {
            resource: { attributes: [{ key: 'service.name', value: str('svc\ud800') }] },
            scopeLogs: [scope('fine', [{ body: str('under a bad service name') }])],
          },
        ],
      };
      // JSON.stringify writes a lone surrogate as its \ud800 escape: the body carries it as JSON may.
      const response = await post(JSON.stringify(request), { 'x-ingest-key': key, 'content-type': 'application/json' });
      expect(response.statusCode, response.body).toBe(200);
      const body = response.json() as { partialSuccess: { rejectedLogRecords: number; errorMessage: string } };
      expect(body.partialSuccess.rejectedLogRecords).toBe(9);
      expect(body.partialSuccess.errorMessage).toMatch(/unpaired UTF-16 surrogate at body/);
      const rows = await readAllLogs(t, owner, projectId);
      expect(rows.map((r) => r.message).sort()).toEqual(['a pair is fine: 😀 😀', 'kept']);
      expect(rows.every((r) => r.source === 'json-service')).toBe(true);
    });
  });

  describe('errors', () => {
    it.each([
      ['text/plain', 'text/plain'],
      ['application/xml', 'application/xml'],
      ['application/protobuf', 'application/protobuf'],
      ['application/grpc', 'application/grpc'],
      ['form data', 'application/x-www-form-urlencoded'],
    ])('answers 415 unsupported_media_type in the envelope for %s, and stores nothing', async (_what, contentType) => {
      const { projectId, key } = await projectWithKey(t);
      const error = expectError(
        await post(JSON.stringify({ resourceLogs: [] }), { 'x-ingest-key': key, 'content-type': contentType }),
        415,
        'unsupported_media_type',
      );
      expect(error.message).toContain(contentType);
      expect(error.message).toContain(PROTOBUF);
      expect(await countLogs(t, projectId)).toBe(0);
    });

    it('answers 415 when there is no Content-Type at all', async () => {
      const { key } = await projectWithKey(t);
      const error = expectError(await post(Buffer.from([0x0a, 0x00]), { 'x-ingest-key': key }), 415, 'unsupported_media_type');
      expect(error.message).toMatch(/missing/);
    });

    it.each([
      ['truncated', Buffer.from([0x0a, 0xff])],
      ['a length beyond the body', oneRecord(field(5, field(1, Buffer.from('cut')))).subarray(0, 8)],
      ['a string that is not UTF-8', oneRecord(field(5, field(1, Buffer.from([0x61, 0xed, 0xa0, 0x80]))))],
      ['an unknown wire type', Buffer.from([0x0f, 0x01])],
      [
        'AnyValue nested 150 deep',
        oneRecord(field(5, Array.from({ length: 150 }).reduce<Buffer>((inner) => field(5, field(1, inner)), field(1, Buffer.from('x'))))),
      ],
    ])('answers 400 with a google.rpc.Status (INVALID_ARGUMENT) for a body %s, and stores nothing', async (_what, payload) => {
      const { projectId, key } = await projectWithKey(t);
      const status = expectStatus(await post(payload, { 'x-ingest-key': key, 'content-type': PROTOBUF }), 400, 3);
      expect(status.message).toMatch(/not a protobuf ExportLogsServiceRequest/);
      expect(await countLogs(t, projectId)).toBe(0);
    });

    it('answers 400 for a protobuf body that says gzip and is not', async () => {
      const { key } = await projectWithKey(t);
      const payload = await protobufExport([{ body: 'plain' }]);
      expectStatus(await post(payload, { 'x-ingest-key': key, 'content-type': PROTOBUF, 'content-encoding': 'gzip' }), 400, 3);
    });

    it('answers 413 (RESOURCE_EXHAUSTED) when a small gzip protobuf body inflates beyond the size limit', async () => {
      const { projectId, key } = await projectWithKey(t);
      const huge = await protobufExport([{ body: 'a'.repeat(t.config.logs.batchMaxBytes + 1) }]);
      const payload = gzipSync(huge);
      expect(payload.length).toBeLessThan(t.config.logs.batchMaxBytes / 100);
      const status = expectStatus(
        await post(payload, { 'x-ingest-key': key, 'content-type': PROTOBUF, 'content-encoding': 'gzip' }),
        413,
        8,
      );
      expect(status.message).toMatch(/too large/);
      expect(await countLogs(t, projectId)).toBe(0);
    });
  });

  describe('security', () => {
    it('answers 401 (UNAUTHENTICATED) in a google.rpc.Status before reading the body when there are no credentials', async () => {
      const status = expectStatus(await post(Buffer.from([0x0a]), { 'content-type': PROTOBUF }), 401, 16);
      expect(status.message).toMatch(/ingest key|token|credentials/i);
    });

    it('answers 403 (PERMISSION_DENIED) to a user token', async () => {
      const { owner } = await projectWithKey(t);
      const payload = await protobufExport([{ body: 'by a user' }]);
      const status = expectStatus(await post(payload, { ...owner.headers, 'content-type': PROTOBUF }), 403, 7);
      expect(status.message).toMatch(/ingest key/i);
    });

    it('checks credentials before the content type: 401, not 415, without a key', async () => {
      expectError(await post('x', { 'content-type': 'text/plain' }), 401, 'unauthenticated');
    });
  });
});
