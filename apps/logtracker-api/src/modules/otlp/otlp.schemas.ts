import { z } from 'zod';

// OTLP/HTTP JSON (opentelemetry-proto, logs/v1). Structure is checked here; each record is then
// mapped on its own so that one bad record is rejected without failing the others. The two
// recursive schemas carry ids: the OpenAPI document refers to them as components.
const anyValue: z.ZodType<unknown> = z.lazy(() =>
  z
    .object({
      stringValue: z.string().optional(),
      boolValue: z.boolean().optional(),
      intValue: z.union([z.string(), z.number()]).optional(),
      doubleValue: z.union([z.number(), z.string()]).optional(),
      bytesValue: z.string().optional(),
      arrayValue: z.object({ values: z.array(anyValue).optional() }).optional(),
      kvlistValue: z.object({ values: z.array(keyValue).optional() }).optional(),
    })
    .passthrough(),
).meta({ id: 'OtlpAnyValue' });
const keyValue: z.ZodType<{ key: string; value?: unknown }> = z.lazy(() =>
  z.object({ key: z.string(), value: anyValue.optional() }).passthrough(),
).meta({ id: 'OtlpKeyValue' });

const logRecord = z
  .object({
    timeUnixNano: z.union([z.string(), z.number()]).optional(),
    observedTimeUnixNano: z.union([z.string(), z.number()]).optional(),
    severityNumber: z.union([z.number(), z.string()]).optional(),
    severityText: z.string().optional(),
    body: anyValue.optional(),
    attributes: z.array(keyValue).optional(),
    traceId: z.string().optional(),
    spanId: z.string().optional(),
  })
  .passthrough();

export const ExportLogsRequest = z.object({
  resourceLogs: z
    .array(
      z
        .object({
          resource: z.object({ attributes: z.array(keyValue).optional() }).passthrough().optional(),
          scopeLogs: z
            .array(
              z
                .object({
                  scope: z.object({ name: z.string().optional(), version: z.string().optional() }).passthrough().optional(),
                  logRecords: z.array(logRecord).optional(),
                })
                .passthrough(),
            )
            .optional(),
        })
        .passthrough(),
    )
    .default([]),
});
export type ExportLogsRequest = z.infer<typeof ExportLogsRequest>;
export type OtlpLogRecord = z.infer<typeof logRecord>;
export type OtlpKeyValue = z.infer<typeof keyValue>;

/** ExportLogsServiceResponse: empty on full success, `partialSuccess` when records were rejected. */
export const ExportLogsResponse = z.object({
  partialSuccess: z
    .object({ rejectedLogRecords: z.number().int(), errorMessage: z.string() })
    .optional(),
});
export type ExportLogsResponse = z.infer<typeof ExportLogsResponse>;
