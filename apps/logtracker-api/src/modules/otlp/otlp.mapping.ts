import { storableText, unstorableTextPaths } from '@repo/schemas';
import type { LogLevel, NewLog } from '../../db/schema/index.js';
import { contextProblem } from '../logs/index.js';
import type { ExportLogsRequest, OtlpKeyValue, OtlpLogRecord } from './otlp.schemas.js';

const MIN_TIME = Date.parse('1970-01-01T00:00:00Z');
const MAX_TIME = Date.parse('2100-01-01T00:00:00Z');

/** OTLP severity numbers: 1–8 TRACE/DEBUG, 9–12 INFO, 13–16 WARN, 17–24 ERROR/FATAL. */
export function levelOf(severityNumber: unknown, severityText: string | undefined): LogLevel {
  const n = typeof severityNumber === 'string' ? severityNumberFromName(severityNumber) : Number(severityNumber ?? 0);
  if (n >= 17) return 'error';
  if (n >= 13) return 'warning';
  if (n >= 9) return 'info';
  if (n >= 1) return 'debug';
  const text = (severityText ?? '').toLowerCase();
  if (/^(fatal|crit|critical|emerg|emergency|alert|err|error)/.test(text)) return 'error';
  if (/^warn/.test(text)) return 'warning';
  if (/^(debug|trace)/.test(text)) return 'debug';
  return 'info';
}

// The JSON encoding may carry the enum's name instead of its number.
function severityNumberFromName(name: string): number {
  const match = /^SEVERITY_NUMBER_(TRACE|DEBUG|INFO|WARN|ERROR|FATAL)(\d)?$/.exec(name);
  if (!match) return Number(name) || 0;
  const base = { TRACE: 1, DEBUG: 5, INFO: 9, WARN: 13, ERROR: 17, FATAL: 21 }[match[1] as 'TRACE'];
  return base + (match[2] ? Number(match[2]) - 1 : 0);
}

/** AnyValue → plain JSON. */
export function decodeValue(value: unknown): unknown {
  if (!value || typeof value !== 'object') return null;
  const v = value as Record<string, unknown>;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.intValue !== undefined) {
    const n = Number(v.intValue);
    return Number.isSafeInteger(n) ? n : String(v.intValue);
  }
  if (v.doubleValue !== undefined) return Number(v.doubleValue);
  if (v.bytesValue !== undefined) return v.bytesValue;
  if (v.arrayValue !== undefined) {
    return ((v.arrayValue as { values?: unknown[] }).values ?? []).map(decodeValue);
  }
  if (v.kvlistValue !== undefined) return decodeAttributes((v.kvlistValue as { values?: OtlpKeyValue[] }).values);
  return null;
}

export function decodeAttributes(attributes: OtlpKeyValue[] | undefined): Record<string, unknown> {
  // fromEntries defines each key as an own property: an assignment to a key named "__proto__"
  // would replace the object's prototype instead.
  return Object.fromEntries((attributes ?? []).map((kv) => [kv.key, decodeValue(kv.value)]));
}

/**
 * Where text PostgreSQL cannot store (NUL, an unpaired UTF-16 surrogate) sits in a value, named
 * under `prefix`: such a record is refused on its own, the others of its export stored.
 */
function unstorableAt(prefix: string, value: unknown): string[] {
  return unstorableTextPaths(value, 5).map((path) => (path ? `${prefix}.${path}` : prefix));
}

function nanosToDate(value: string | number | undefined): Date | undefined {
  if (value === undefined || value === '' || value === 0 || value === '0') return undefined;
  let ms: number;
  try {
    // A JSON number beyond 2^53 is only the nearest double (…05250000000 reads as …05249999872):
    // its shortest decimal form is the digits the sender wrote, so a whole millisecond stays whole.
    ms = Number(BigInt(typeof value === 'number' ? String(Math.trunc(value)) : value) / 1_000_000n);
  } catch {
    return new Date(Number.NaN);
  }
  return new Date(ms);
}

export interface MappedBatch {
  rows: NewLog[];
  rejected: number;
  errors: string[];
}

/** Maps every record it can; counts and explains the ones it cannot. */
export function mapExportRequest(request: ExportLogsRequest, projectId: number, receivedAt: Date): MappedBatch {
  const rows: NewLog[] = [];
  const errors: string[] = [];
  let rejected = 0;

  for (const resourceLogs of request.resourceLogs) {
    const resource = decodeAttributes(resourceLogs.resource?.attributes);
    const serviceName = typeof resource['service.name'] === 'string' ? (resource['service.name'] as string) : undefined;
    const resourceText = unstorableAt('resource', resource);
    for (const scopeLogs of resourceLogs.scopeLogs ?? []) {
      const scope = scopeLogs.scope?.name || undefined;
      const unstorable = scope === undefined ? resourceText : [...resourceText, ...unstorableAt('scope.name', scope)];
      for (const record of scopeLogs.logRecords ?? []) {
        const result = mapRecord(record, { projectId, receivedAt, resource, serviceName, scope, unstorable });
        if (typeof result === 'string') {
          rejected += 1;
          if (errors.length < 5) errors.push(result);
        } else {
          rows.push(result);
        }
      }
    }
  }
  return { rows, rejected, errors };
}

function mapRecord(
  record: OtlpLogRecord,
  ctx: {
    projectId: number;
    receivedAt: Date;
    resource: Record<string, unknown>;
    serviceName?: string;
    scope?: string;
    /** Paths of unstorable text in the record's resource and scope. */
    unstorable: string[];
  },
): NewLog | string {
  const body = decodeValue(record.body);
  if (body === null || body === '') return 'a log record has no body';
  const attributes = decodeAttributes(record.attributes);
  // Checked in the decoded body, not in its JSON text: stringify would escape a NUL inside a
  // structured body into storable "\u0000" and keep a record the others lose.
  const unstorable = [
    ...unstorableAt('body', body),
    ...unstorableAt('attributes', attributes),
    ...unstorableAt('traceId', record.traceId ?? ''),
    ...unstorableAt('spanId', record.spanId ?? ''),
    ...ctx.unstorable,
  ];
  if (unstorable.length > 0) {
    return `a log record holds a NUL character or an unpaired UTF-16 surrogate at ${unstorable.slice(0, 5).join(', ')}`;
  }
  const message = typeof body === 'string' ? body : JSON.stringify(body);
  if (message.length > 65_536) return 'a log record body is longer than 65 536 characters';

  const timestamp = nanosToDate(record.timeUnixNano) ?? nanosToDate(record.observedTimeUnixNano) ?? ctx.receivedAt;
  const t = timestamp.getTime();
  if (!Number.isFinite(t) || t < MIN_TIME || t >= MAX_TIME) return 'a log record has a time outside 1970–2100';

  const context: Record<string, unknown> = { ...attributes };
  if (record.traceId) context.trace_id = record.traceId;
  if (record.spanId) context.span_id = record.spanId;
  if (ctx.scope) context['otel.scope'] = ctx.scope;
  const resource = Object.fromEntries(Object.entries(ctx.resource).filter(([k]) => k !== 'service.name'));
  if (Object.keys(resource).length > 0) context['otel.resource'] = resource;
  const problem = contextProblem(context);
  if (problem) return `a log record's attributes are invalid: ${problem.message}`;

  const source = (ctx.serviceName ?? ctx.scope)?.slice(0, 255);
  return {
    projectId: ctx.projectId,
    level: levelOf(record.severityNumber, record.severityText),
    message,
    context: Object.keys(context).length > 0 ? context : null,
    // Cut at 255, a surrogate pair may lose its second half: no source rather than a broken one.
    source: source && storableText(source) ? source : null,
    timestamp,
    receivedAt: ctx.receivedAt,
  };
}
