import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import protobuf from 'protobufjs';
import type { ExportLogsResponse } from './otlp.schemas.js';

export const PROTOBUF = 'application/x-protobuf';

// The definitions ship beside dist/ (package.json "files"): `proto/` of the app, reached the same
// way from src/ (tests) and dist/ (production). Loaded once, at start-up: a missing file fails fast.
const PROTO_DIR = fileURLToPath(new URL('../../../proto/', import.meta.url));
const root = new protobuf.Root();
// Imports are written from the root of the proto tree, as upstream writes them.
root.resolvePath = (_origin, target) => join(PROTO_DIR, target);
root.loadSync(['opentelemetry/proto/collector/logs/v1/logs_service.proto', 'google/rpc/status.proto']);
root.resolveAll();

const ExportRequest = root.lookupType('opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest');
const ExportResponse = root.lookupType('opentelemetry.proto.collector.logs.v1.ExportLogsServiceResponse');
const Status = root.lookupType('google.rpc.Status');

interface DecodedRecord {
  traceId?: string;
  spanId?: string;
}
interface DecodedRequest {
  resourceLogs?: { scopeLogs?: { logRecords?: DecodedRecord[] }[] }[];
}

/**
 * Decodes a binary ExportLogsServiceRequest into its OTLP/JSON form, so that one schema and one
 * mapping serve both encodings: 64-bit integers (times, intValue) as decimal strings, enums as
 * numbers, bytesValue in base64, trace and span ids in hex, NaN and infinities as their JSON names.
 * Throws on bytes that are not such a message (truncated, wrong wire type, nested beyond 100 levels).
 */
export function decodeExportRequest(bytes: Uint8Array): unknown {
  const request = ExportRequest.toObject(ExportRequest.decode(bytes), {
    longs: String,
    enums: Number,
    bytes: String,
    json: true,
  }) as DecodedRequest;
  // toObject writes every bytes field in base64; OTLP/JSON writes the two ids in hex.
  for (const resourceLogs of request.resourceLogs ?? []) {
    for (const scopeLogs of resourceLogs.scopeLogs ?? []) {
      for (const record of scopeLogs.logRecords ?? []) {
        if (record.traceId !== undefined) record.traceId = Buffer.from(record.traceId, 'base64').toString('hex');
        if (record.spanId !== undefined) record.spanId = Buffer.from(record.spanId, 'base64').toString('hex');
      }
    }
  }
  return request;
}

export function encodeExportResponse(response: ExportLogsResponse): Buffer {
  return Buffer.from(ExportResponse.encode(ExportResponse.fromObject(response)).finish());
}

// google.rpc.Code for the HTTP statuses the route answers; OTLP/HTTP carries both.
const RPC_CODE: Record<number, number> = {
  400: 3, // INVALID_ARGUMENT
  401: 16, // UNAUTHENTICATED
  403: 7, // PERMISSION_DENIED
  404: 5, // NOT_FOUND
  413: 8, // RESOURCE_EXHAUSTED
  422: 3, // INVALID_ARGUMENT
  429: 8, // RESOURCE_EXHAUSTED
  502: 14, // UNAVAILABLE
  503: 14, // UNAVAILABLE
};

/** The error envelope as the `google.rpc.Status` OTLP/HTTP answers a protobuf request with. */
export function encodeErrorStatus(
  httpStatus: number,
  envelope: { error?: string; message?: string; errors?: Record<string, string[]> },
): Buffer {
  const fields = Object.entries(envelope.errors ?? {}).map(([field, messages]) => `${field}: ${messages.join(', ')}`);
  const message = [envelope.message ?? 'The request failed', ...fields].join('; ');
  const code = RPC_CODE[httpStatus] ?? (httpStatus >= 500 ? 13 /* INTERNAL */ : 3);
  return Buffer.from(Status.encode(Status.fromObject({ code, message })).finish());
}
