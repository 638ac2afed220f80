import { STATUS_CODES } from 'node:http';
import type { FastifyDynamicSwaggerOptions, SwaggerTransform, SwaggerTransformObject } from '@fastify/swagger';
import { decimalIds, errorEnvelope, responseDescriptions } from '@repo/schemas';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { IDEMPOTENCY_KEY_HEADER, idempotencyKeyParameter } from './idempotency.js';

type Json = Record<string, unknown>;

export interface OpenApiDocumentOptions {
  title: string;
  description: string;
  version: string;
  tags?: { name: string; description: string }[];
  /** Security schemes beyond `bearerAuth`, e.g. an API-key header. */
  securitySchemes?: Record<string, { type: 'apiKey'; in: 'header'; name: string; description?: string }>;
}

/** The name a wildcard route's rest-of-path parameter takes in the document (`/media/*` → `/media/{path}`). */
const WILDCARD_PARAM = 'path';

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The shape of a zod object schema (params, querystring), or nothing for any other schema. */
function shapeOf(schema: unknown): Record<string, unknown> {
  if (!isObject(schema) || !('shape' in schema) || !isObject(schema.shape)) return {};
  return schema.shape;
}

type ZodSchema = Parameters<typeof decimalIds.get>[0];

/** The schema inside `.optional()`, `.nullable()` and `.default()`. */
function unwrapped(schema: ZodSchema): ZodSchema {
  const def = schema._zod.def as { type: string; innerType?: ZodSchema };
  return def.innerType && ['optional', 'nullable', 'default'].includes(def.type) ? unwrapped(def.innerType) : schema;
}

/** A path or query parameter read by one of the shared decimal id schemas is shown as the integer it stands for. */
function documentIntegerIds(zodPart: unknown, jsonPart: unknown) {
  if (!isObject(jsonPart) || !isObject(jsonPart.properties)) return;
  const properties = jsonPart.properties;
  for (const [name, zodSchema] of Object.entries(shapeOf(zodPart))) {
    const id = decimalIds.get(unwrapped(zodSchema as ZodSchema));
    const current = properties[name];
    if (!id || !isObject(current)) continue;
    properties[name] = {
      type: 'integer',
      minimum: 1,
      maximum: id.maximum,
      ...(typeof current.description === 'string' ? { description: current.description } : {}),
    };
  }
}

/**
 * Fastify's `*` becomes `{*}`, which is no parameter name OpenAPI tools accept: the route is
 * documented with a named parameter instead (it still matches the rest of the path).
 */
function nameWildcard(url: string, params: unknown): string {
  if (!url.endsWith('*')) return url;
  if (isObject(params) && isObject(params.properties) && '*' in params.properties) {
    const { '*': rest, ...others } = params.properties;
    params.properties = {
      ...others,
      [WILDCARD_PARAM]: { ...(isObject(rest) ? rest : {}), description: 'The rest of the path, slashes included' },
    };
    if (Array.isArray(params.required)) {
      params.required = params.required.map((name: unknown) => (name === '*' ? WILDCARD_PARAM : name));
    }
  }
  return `${url.slice(0, -1)}:${WILDCARD_PARAM}`;
}

/**
 * Each response says what its status means (a response schema's own `description` wins).
 * @fastify/swagger reads `x-response-description` and drops it from the schema; a `$ref` loses
 * every sibling when converted, so it carries a plain `description`, which is read as well.
 */
function describeResponses(response: unknown) {
  if (!isObject(response)) return;
  for (const [status, schema] of Object.entries(response)) {
    if (!isObject(schema) || typeof schema.description === 'string') continue;
    const code = Number(status);
    const description = responseDescriptions[code] ?? STATUS_CODES[code] ?? `Status ${status}`;
    schema[typeof schema.$ref === 'string' ? 'description' : 'x-response-description'] = description;
  }
}

/** The `Idempotency-Key` header among the parameters of a route that honours it (see idempotency.ts). */
function listIdempotencyKey(schema: Json) {
  const headers = isObject(schema.headers) ? schema.headers : { type: 'object', properties: {} };
  headers.properties = { ...(isObject(headers.properties) ? headers.properties : {}), [IDEMPOTENCY_KEY_HEADER]: { ...idempotencyKeyParameter } };
  schema.headers = headers;
}

/** Methods whose body Fastify reads, and holds to the body limit. */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

type TransformInput = Parameters<SwaggerTransform>[0];

/**
 * The answers the shared foundation gives before a route's own code runs, which every operation
 * that can get them lists: 414 for all (the router refuses a path segment it reads as a parameter
 * over 100 characters, before it knows the route), 413 for one that takes a body (a body schema or
 * media types, a body limit of its own, or a method whose body is read: the limit is enforced
 * whatever the route reads), and 429 for one the rate limiter counts (all but those that opt out
 * with `config.rateLimit: false`, such as the health probes). A route's own entry for a status wins.
 */
function withSharedResponses({ schema, route }: Pick<TransformInput, 'schema' | 'route'>): TransformInput['schema'] {
  // A route that declares no answer is documented with Fastify's default one, as it was.
  if (!schema || schema.hide || schema.response === undefined) return schema;
  const methods = [route.method].flat().map((method) => method.toUpperCase());
  const takesBody =
    schema.body !== undefined || schema.consumes !== undefined || route.bodyLimit !== undefined || methods.some((method) => BODY_METHODS.has(method));
  const limited = route.config?.rateLimit !== false;
  const shared = {
    ...(takesBody ? { 413: errorEnvelope } : {}),
    414: errorEnvelope,
    ...(limited ? { 429: errorEnvelope } : {}),
  };
  return { ...schema, response: { ...shared, ...(schema.response as object) } };
}

/** The zod type provider's transform, then the document's own conventions for each route. */
const transform: SwaggerTransform = (input) => {
  const document = { ...input, schema: withSharedResponses(input) };
  const result = jsonSchemaTransform(document as Parameters<typeof jsonSchemaTransform>[0]);
  const schema = result.schema as Json | undefined;
  if (!schema || schema.hide) return result;
  const zodSchema = document.schema as Json;
  documentIntegerIds(zodSchema.params, schema.params);
  documentIntegerIds(zodSchema.querystring, schema.querystring);
  describeResponses(schema.response);
  if (document.route.config?.idempotencyKey === true) listIdempotencyKey(schema);
  return { schema, url: nameWildcard(result.url, schema.params) };
};

/** Every `$ref` to a component schema in a JSON value. */
function collectRefs(value: unknown, into: Set<string>) {
  if (Array.isArray(value)) {
    for (const item of value) collectRefs(item, into);
  } else if (isObject(value)) {
    for (const [key, inner] of Object.entries(value)) {
      if (key === '$ref' && typeof inner === 'string' && inner.startsWith('#/components/schemas/')) {
        into.add(inner.slice('#/components/schemas/'.length));
      } else {
        collectRefs(inner, into);
      }
    }
  }
}

/**
 * zod wraps a reference that is optional in a one-member `allOf` (`{ allOf: [{ $ref }] }`), which
 * linters flag as pointless: the reference stands alone.
 */
function unwrapSingleAllOf(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(unwrapSingleAllOf);
  if (!isObject(value)) return value;
  const { allOf } = value;
  if (Array.isArray(allOf) && allOf.length === 1 && Object.keys(value).length === 1) return unwrapSingleAllOf(allOf[0]);
  return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, unwrapSingleAllOf(inner)]));
}

/**
 * A record over an enum (`z.record(z.enum([...]), v)`) has every key: zod says so with
 * `propertyNames`, which OpenAPI 3.0 lacks, leaving `required` names no property defines. Each
 * key becomes a property of the value's schema.
 */
function listRecordKeys(value: unknown) {
  if (Array.isArray(value)) {
    for (const item of value) listRecordKeys(item);
    return;
  }
  if (!isObject(value)) return;
  for (const inner of Object.values(value)) listRecordKeys(inner);
  const { required, additionalProperties } = value;
  if (value.type !== 'object' || !Array.isArray(required) || !isObject(additionalProperties)) return;
  const properties = isObject(value.properties) ? value.properties : {};
  const missing = required.filter((name): name is string => typeof name === 'string' && !(name in properties));
  if (missing.length === 0) return;
  for (const name of missing) properties[name] = additionalProperties;
  value.properties = properties;
  value.additionalProperties = false;
}

/**
 * The components of the zod registry (recursive schemas, shared envelopes), keeping only those the
 * document refers to: each registered schema is emitted in an input and an output form, and most
 * are used in one direction only.
 */
const transformObject: SwaggerTransformObject = (document) => {
  const object = jsonSchemaTransformObject(document) as Json & { components?: Json & { schemas?: Record<string, unknown> } };
  const schemas = object.components?.schemas ?? {};
  const { components: _components, ...rest } = object;
  const used = new Set<string>();
  collectRefs(rest, used);
  for (let pending = [...used]; pending.length > 0; ) {
    const found = new Set<string>();
    for (const name of pending) collectRefs(schemas[name], found);
    pending = [...found].filter((name) => !used.has(name));
    for (const name of pending) used.add(name);
  }
  const kept = Object.fromEntries(Object.entries(schemas).filter(([name]) => used.has(name)));
  const result = unwrapSingleAllOf({ ...object, components: { ...object.components, schemas: kept } });
  listRecordKeys(result);
  return result as ReturnType<SwaggerTransformObject>;
};

/**
 * The options of @fastify/swagger for an app's document: OpenAPI 3.0.3, components from the zod
 * registry, integer path ids, described responses, and the security every operation states. Paths
 * are absolute (`/api/...`, and the log tracker's OTLP receiver at `/v1/logs`), so the one server
 * is the host itself; bearer tokens are the default, and public operations say `security: []`.
 */
export function openApiOptions(options: OpenApiDocumentOptions): FastifyDynamicSwaggerOptions {
  return {
    openapi: {
      openapi: '3.0.3',
      info: { title: options.title, description: options.description, version: options.version },
      servers: [{ url: '/', description: 'This server' }],
      tags: options.tags,
      security: [{ bearerAuth: [] }],
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'A session token from sign-in' },
          ...options.securitySchemes,
        },
      },
    },
    transform,
    transformObject,
  };
}
