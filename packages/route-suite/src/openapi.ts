/** The parts of an OpenAPI 3.0 document the suite reads. */
export type JsonSchema = {
  $ref?: string;
  type?: string | string[];
  nullable?: boolean;
  enum?: unknown[];
  const?: unknown;
  format?: string;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number | boolean;
  exclusiveMaximum?: number | boolean;
  minItems?: number;
  maxItems?: number;
  items?: JsonSchema | JsonSchema[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  default?: unknown;
};

interface ParameterObject {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required?: boolean;
  description?: string;
  schema?: JsonSchema;
}

/**
 * A route's rest-of-path parameter (Fastify's `*`, documented by @repo/http as `{path}` with this
 * description): the router bounds no length for it, so no 414 is expected.
 */
const REST_OF_PATH = /^the rest of the path\b/i;

interface OperationObject {
  operationId?: string;
  tags?: string[];
  summary?: string;
  security?: Record<string, string[]>[];
  parameters?: ParameterObject[];
  requestBody?: { required?: boolean; content?: Record<string, { schema?: JsonSchema }> };
  responses?: Record<string, unknown>;
}

export interface SecurityScheme {
  type: string;
  scheme?: string;
  in?: string;
  name?: string;
}

export interface OpenApiDocument {
  paths?: Record<string, Record<string, OperationObject>>;
  components?: { schemas?: Record<string, JsonSchema>; securitySchemes?: Record<string, SecurityScheme> };
}

export interface SuiteParameter {
  name: string;
  required: boolean;
  schema: JsonSchema;
  /** Matches the rest of the path, slashes included (no length limit from the router). */
  restOfPath?: boolean;
}

/** One operation of the document, as the suite tests it. */
export interface SuiteOperation {
  /** The operationId, or `METHOD path` for an operation without one. */
  id: string;
  method: string;
  /** The document's path template, `/api/v1/vehicles/{vehicle}`. */
  path: string;
  tags: string[];
  summary: string;
  /** As declared; undefined when the operation declares none. */
  security?: Record<string, string[]>[];
  /** Documented status codes. */
  responses: Set<number>;
  pathParams: SuiteParameter[];
  queryParams: SuiteParameter[];
  /** The request body as documented; `schema` is the JSON one, when a JSON content type is declared. */
  body?: { required: boolean; contentTypes: string[]; schema?: JsonSchema };
}

const METHODS = new Set(['get', 'put', 'post', 'delete', 'patch', 'options', 'trace']);

/** Every operation of the document but the HEAD twins of GET routes. */
export function readOperations(doc: OpenApiDocument): SuiteOperation[] {
  const operations: SuiteOperation[] = [];
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const [method, op] of Object.entries(item)) {
      if (!METHODS.has(method)) continue;
      const params = op.parameters ?? [];
      const toParam = (p: ParameterObject): SuiteParameter => ({
        name: p.name,
        required: p.required ?? false,
        schema: p.schema ?? {},
        restOfPath: p.name === '*' || REST_OF_PATH.test(p.description ?? ''),
      });
      const content = op.requestBody?.content ?? {};
      const contentTypes = Object.keys(content);
      const jsonType = contentTypes.find((type) => /^application\/(.+\+)?json/.test(type));
      operations.push({
        id: op.operationId ?? `${method.toUpperCase()} ${path}`,
        method: method.toUpperCase(),
        path,
        tags: op.tags ?? [],
        summary: op.summary ?? '',
        security: op.security,
        responses: new Set(
          Object.keys(op.responses ?? {})
            .filter((code) => /^\d{3}$/.test(code))
            .map(Number),
        ),
        pathParams: params.filter((p) => p.in === 'path').map(toParam),
        queryParams: params.filter((p) => p.in === 'query').map(toParam),
        body: op.requestBody
          ? { required: op.requestBody.required ?? false, contentTypes, schema: jsonType ? (content[jsonType]?.schema ?? {}) : undefined }
          : undefined,
      });
    }
  }
  return operations;
}

const COMPONENT_REF = /^#\/components\/schemas\/(.+)$/;

function findRef(doc: OpenApiDocument, ref: string): JsonSchema | undefined {
  const name = COMPONENT_REF.exec(ref)?.[1];
  return name === undefined ? undefined : doc.components?.schemas?.[decodeURIComponent(name)];
}

/**
 * The schema a `$ref` names. A document whose refs do not resolve is broken (the suite's first
 * test says which): generating requests from it would only guess, so this throws.
 */
export function resolveRef(doc: OpenApiDocument, ref: string): JsonSchema {
  const target = findRef(doc, ref);
  if (!target) throw new Error(`${ref} names no component of the document`);
  return target;
}

export function unresolvedRefs(doc: OpenApiDocument): { ref: string; at: string }[] {
  const found: { ref: string; at: string }[] = [];
  const walk = (node: unknown, at: string) => {
    if (Array.isArray(node)) return node.forEach((item, i) => walk(item, `${at}/${i}`));
    if (!node || typeof node !== 'object') return;
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string' && !findRef(doc, value)) found.push({ ref: value, at });
      else walk(value, `${at}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`);
    }
  };
  walk(doc.paths, '#/paths');
  walk(doc.components, '#/components');
  return found;
}

/** Whether a security requirement list lets an anonymous caller in (`[]`, or an empty requirement `{}`). */
export function allowsAnonymous(security: Record<string, string[]>[] | undefined): boolean {
  return !security || security.length === 0 || security.some((requirement) => Object.keys(requirement).length === 0);
}

/**
 * The URL of an operation with its path parameters filled in. Values are raw URL text (already
 * percent-encoded where they need to be), so hostile encodings reach the router as written.
 */
export function fillPath(path: string, rawValues: Record<string, string>): string {
  return path.replace(/\{([^}]+)\}/g, (_match, name: string) => {
    const value = rawValues[name];
    if (value === undefined) throw new Error(`no value for path parameter ${name} of ${path}`);
    return value;
  });
}
