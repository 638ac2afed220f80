import fastJson from 'fast-json-stringify';
import type { FastifySerializerCompiler } from 'fastify/types/schema.js';
import { serializerCompiler as zodSerializerCompiler } from 'fastify-type-provider-zod';
import { z } from 'zod';

/**
 * Response serialisation compiled once per route, as Fastify's own serialiser does: each route's
 * zod response schema is turned into the JSON Schema of its output (the one the OpenAPI document
 * shows) and compiled with fast-json-stringify, which writes exactly the properties the schema
 * declares and nothing else. Encoding every response through zod instead checked each value
 * against its schema, and that cost more than the rest of a small read's work; the presenters
 * are typed against the same schemas, so the check belongs to the compiler, not to every request.
 * A schema JSON Schema cannot express (a transform, a custom type) keeps zod's serialiser.
 */
export const serializerCompiler: FastifySerializerCompiler<z.ZodType> = (route) => {
  const schema = route.schema instanceof z.ZodType ? route.schema : undefined;
  if (!schema) return zodSerializerCompiler(route as Parameters<typeof zodSerializerCompiler>[0]);
  // Every route states its error answers with the same few schemas, for GET and HEAD alike:
  // compiled once each, not once per route and status.
  let serialize = compiled.get(schema);
  if (!serialize) {
    try {
      const jsonSchema = z.toJSONSchema(schema, { io: 'output', unrepresentable: 'throw', target: 'draft-7' });
      serialize = fastJson(nullableBranches(jsonSchema) as Parameters<typeof fastJson>[0]);
    } catch {
      // zod's serialiser names the route in its errors: one per route.
      return zodSerializerCompiler(route as Parameters<typeof zodSerializerCompiler>[0]);
    }
    compiled.set(schema, serialize);
  }
  return serialize;
};

const compiled = new WeakMap<z.ZodType, (data: unknown) => string>();

type JsonSchema = { [key: string]: unknown };
const isSchema = (value: unknown): value is JsonSchema => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * zod writes a nullable value as `anyOf: [<schema>, { type: 'null' }]`; fast-json-stringify picks an
 * `anyOf` branch by validating the value against each one, for every such field of every row. The
 * same meaning as `<schema>` with `nullable: true` is written directly.
 */
function nullableBranches(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(nullableBranches);
  if (!isSchema(node)) return node;
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(node)) out[key] = nullableBranches(value);
  const anyOf = out.anyOf;
  if (Array.isArray(anyOf) && anyOf.length === 2) {
    const nullAt = anyOf.findIndex((branch) => isSchema(branch) && branch.type === 'null' && Object.keys(branch).length === 1);
    const other = anyOf[1 - nullAt];
    if (nullAt !== -1 && isSchema(other) && !('anyOf' in other) && !('$ref' in other)) {
      const { anyOf: _, ...rest } = out;
      return { ...rest, ...other, nullable: true };
    }
  }
  return out;
}
