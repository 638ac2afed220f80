import fc from 'fast-check';
import { resolveRef, type JsonSchema, type OpenApiDocument } from './openapi.js';

/**
 * A small value the schema accepts (required properties only), for the authentication and
 * authorisation checks: a request that is valid but for its credentials or its caller's role, so
 * that a 422 cannot stand in for the 401 or 403 being checked.
 */
export function sampleValid(doc: OpenApiDocument, schema: JsonSchema, depth = 0): unknown {
  if (depth > 8) return null;
  if (schema.$ref) {
    return sampleValid(doc, resolveRef(doc, schema.$ref), depth + 1);
  }
  if (schema.const !== undefined) return schema.const;
  if (schema.enum?.length) return schema.enum[0];
  if (schema.default !== undefined) return schema.default;
  const alternative = (schema.anyOf ?? schema.oneOf)?.[0];
  if (alternative) return sampleValid(doc, alternative, depth + 1);
  if (schema.allOf?.length) {
    const parts = schema.allOf.map((part) => sampleValid(doc, part, depth + 1));
    return parts.every((p) => p && typeof p === 'object' && !Array.isArray(p)) ? Object.assign({}, ...parts) : parts[0];
  }
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  switch (type ?? (schema.properties ? 'object' : schema.items ? 'array' : undefined)) {
    case 'string':
      return sampleString(schema, '');
    case 'integer':
    case 'number': {
      const min = schema.minimum ?? (typeof schema.exclusiveMinimum === 'number' ? schema.exclusiveMinimum + 1 : undefined);
      const max = schema.maximum ?? (typeof schema.exclusiveMaximum === 'number' ? schema.exclusiveMaximum - 1 : undefined);
      if (min !== undefined && min > 1) return Math.ceil(min);
      if (max !== undefined && max < 1) return Math.floor(max);
      return 1;
    }
    case 'boolean':
      return false;
    case 'null':
      return null;
    case 'array': {
      const items = Array.isArray(schema.items) ? (schema.items[0] ?? {}) : (schema.items ?? {});
      return Array.from({ length: schema.minItems ?? 0 }, () => sampleValid(doc, items, depth + 1));
    }
    case 'object': {
      // Every documented property, not only the required ones: a body that must "send at least
      // one of" its optional fields is then valid too.
      const out: Record<string, unknown> = {};
      const keys = new Set([...Object.keys(schema.properties ?? {}), ...(schema.required ?? [])]);
      for (const key of keys) {
        const property = schema.properties?.[key] ?? {};
        out[key] = isPlainString(doc, property) ? sampleString(property, key) : sampleValid(doc, property, depth + 1);
      }
      return out;
    }
    default:
      return {};
  }
}

function isPlainString(doc: OpenApiDocument, schema: JsonSchema): boolean {
  const target = schema.$ref ? resolveRef(doc, schema.$ref) : schema;
  const type = Array.isArray(target?.type) ? target.type.find((t) => t !== 'null') : target?.type;
  return type === 'string' && !target?.enum && target?.const === undefined && target?.default === undefined;
}

/**
 * A string for the schema. A property named like an e-mail address or a URL gets one even where
 * the document lost the format (zod's `.pipe(z.email())` is emitted as a plain string).
 */
function sampleString(schema: JsonSchema, name: string): string {
  const format = schema.format ?? (/e-?mail$/i.test(name) ? 'email' : /_?ur[li]$/i.test(name) ? 'uri' : undefined);
  switch (format) {
    case 'email':
      return 'route-suite@example.test';
    case 'date-time':
      return new Date().toISOString();
    case 'date':
      return new Date().toISOString().slice(0, 10);
    case 'uuid':
      return '00000000-0000-4000-8000-000000000000';
    case 'uri':
    case 'url':
      return 'https://example.test/';
    default:
      break;
  }
  if (schema.pattern) {
    try {
      const [value] = fc.sample(fc.stringMatching(new RegExp(schema.pattern), { size: 'xsmall' }), { numRuns: 1, seed: 1 });
      if (value !== undefined) return value;
    } catch {
      // Fall through to a plain string.
    }
  }
  const length = Math.max(schema.minLength ?? 0, Math.min(8, schema.maxLength ?? 8));
  return 'routesuite'.repeat(Math.ceil(length / 10) + 1).slice(0, length);
}
